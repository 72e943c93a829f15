"""The 81 real deployment files of tests/data/deployments (SOURCES.md: repository, path, commit and a hand verdict
for each), checked with the models kvplan can find locally: its bundled specs and the byte-copied config.json files of
tests/data/public_models (--models-dir). Every file is read by a reader of its format (none is "unrecognised"),
and every verdict is judged by hand below, against SOURCES.md's arithmetic:

- a file is never invalid: each one is a deployment its authors ran (the corpus holds no broken file);
- "cannot judge" names the missing input (the model, the GPU kind, a value set outside the file, a release or an
  option kvplan does not model) and is the right answer where SOURCES.md says "cannot judge" or where kvplan lacks
  the model's config.json: SOURCES.md's sizes assume the model, which kvplan does not guess;
- a pass agrees with SOURCES.md's "fits", and is a pass on every GPU the file allows.

The second pass gives --gpu h100 (a GPU kind for files that name none): the deployments SOURCES.md judges on
"24 GB+" or "80 GB-class" cards then pass, as its arithmetic says they do on an H100.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from kvplan.check import deployment, run

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "deployments"
MODELS = ROOT / "tests" / "data" / "public_models"

NOT_FOUND = "is not bundled, not under --models-dir and not in the Hugging Face cache"  # the model: cannot judge
NO_KIND = "names no GPU kind"
SKIP = ("skipped", "")

# file -> every verdict in order: (status, text its reason holds). The comment is the hand judgement.
EXPECTED: dict[str, list[tuple[str, str]]] = {
    # Qwen3.8-27B-NVFP4 (an uncommon id) has no config here; it also uses MTP speculative decoding and `count: all`
    # names no GPU kind (DGX Spark only in the repository's name). SOURCES: fits on a GB10, needs --gpu.
    "compose/dgx-spark-qwen38-27b-nvfp4-mtp.yml": [("cannot_judge", "unsloth/Qwen3.8-27B-NVFP4' " + NOT_FOUND)],
    # nginx only: SOURCES "nothing to judge".
    "compose/fabric-nginx-proxy-only.yml": [("skipped", "no service starts vLLM")],
    # built from the Dockerfile beside it in its repository, not copied here: its launch and release are unknown
    # (the whole folder is in deployments_2026/compose/gpt-oss-build). SOURCES: cannot judge here.
    "compose/gpt-oss-rtx5090-opt125m-defaults.yml": [("cannot_judge", "builds its image from Dockerfile, which kvplan cannot read")],
    # both services are built from h2oGPT's Dockerfile, not copied here; vLLM's model and TP are in
    # ${H2OGPT_VLLM_ARGS} anyway. SOURCES: cannot judge.
    "compose/h2ogpt-vllm-device-ids-args-var.yml": [("cannot_judge", "builds its image from Dockerfile, which kvplan"),
                                                    ("cannot_judge", "builds its image from Dockerfile, which kvplan")],
    # /run.sh builds the arguments from a mounted .env. SOURCES: cannot judge.
    "compose/isannai-vllm-entrypoint-env-required.yml": [("cannot_judge", "runs `/bin/sh /run.sh`")],
    # the model is ${VLLM_LLM_MODEL_ID}, set at deploy time (and an AMD card of unknown kind). SOURCES: cannot judge.
    "compose/opea-agentqna-rocm-vllm-tp4.yaml": [("cannot_judge", "--model is $VLLM_LLM_MODEL_ID")],
    # Intel Gaudi (runtime: habana): not a GPU kvplan models. SOURCES: cannot judge.
    "compose/opea-deepresearch-gaudi-anchors.yaml": [("cannot_judge", "runs on Intel Gaudi HPUs (runtime: habana)")],
    # four back-ends: model only in the environment (NVIDIA, ROCm), Gaudi, OpenVINO on the CPU. SOURCES: cannot judge.
    "compose/opea-vllm-multi-backend-nomodel.yaml": [("cannot_judge", "--model is $LLM_MODEL_ID"),
                                                     ("cannot_judge", "runs on Intel Gaudi HPUs"),
                                                     ("cannot_judge", "runs on the CPU (image opea/vllm-openvino"),
                                                     ("cannot_judge", "--model is $VLLM_LLM_MODEL_ID")],
    # Qwen3-Coder-30B-A3B-Instruct-FP8 has no config here; `gpus: all` names no kind (RTX 3090 Ti only in the repository
    # name). SOURCES: does not fit a 24 GB card, once model and GPU are given.
    "compose/opencode-3090ti-qwen3-coder-30b-fp8.yml": [("cannot_judge", "Qwen3-Coder-30B-A3B-Instruct-FP8' " + NOT_FOUND)],
    # one GPU (device_ids ['0']) of no named kind. SOURCES: cannot judge; fits 24 GB+.
    "compose/sglang-llama31-8b-device0.yaml": [("cannot_judge", "asks for 1 NVIDIA GPU (deploy.resources.reservations.devices")],
    # vllm/vllm-openai:v0.24.0 is modelled (the 0.20-0.25 line); neither model has a config here. SOURCES: no GPU
    # kind, cannot judge.
    # SOURCES: both servers claim 0.78 of the same GPUs (count: all each): they cannot share one GPU (issue 26: was
    # judged service by service)
    "compose/vllm-serve-multi-gemma4-ornith-specdec.yml": [("cannot_judge", "shares a GPU with service ornith"),
                                                           ("cannot_judge", "shares a GPU with service gemma4")],
    # InternVL3-14B has no config here. SOURCES: cannot judge (no GPU kind).
    "dockerfile/internvl3-14b-entrypoint.Dockerfile": [("cannot_judge", "OpenGVLab/InternVL3-14B' " + NOT_FOUND)],
    # a Dockerfile names no GPU. SOURCES: cannot judge; 16 GB + 16 GiB KV at the default 128K needs an 80 GB card.
    "dockerfile/koyeb-llama31-8b-entrypoint.Dockerfile": [("cannot_judge", "the file names no GPU")],
    # as above (the comment line inside the continued CMD is removed by docker, so --grammar-backend is passed).
    "dockerfile/rubric-sglang-qwen3-30b-a3b-cmd.Dockerfile": [("cannot_judge", "the file names no GPU")],
    # decode: opt-125m has no config here; prefill runs a Gaudi image. SOURCES: mixed vendors, cannot name the kind.
    "helm/llmd-modelservice-heterogeneous-pd-nvidia-gaudi.yaml": [("cannot_judge", "facebook/opt-125m' " + NOT_FOUND),
                                                                  ("cannot_judge", "runs on Intel Gaudi HPUs")],
    # opt-125m has no config here (and NIXL --kv-transfer-config would stop it next). SOURCES: fits; no GPU kind.
    "helm/llmd-modelservice-pd-opt125m.yaml": [("cannot_judge", "facebook/opt-125m' " + NOT_FOUND)] * 2,
    "helm/prodstack-amd-opt125m.yaml": [("cannot_judge", "facebook/opt-125m' " + NOT_FOUND)],
    # LMCache with NIXL (the chart's --kv-transfer-config, modelled: docs/engines/features/disagg.md) and no GPU
    # requested. SOURCES: cannot judge.
    "helm/prodstack-disagg-prefill-llama31-8b.yaml": [("cannot_judge", "the file names no GPU")] * 2,
    # one GPU of no kind. SOURCES: fits 24 GB+.
    "helm/prodstack-gcp-llama31-8b-nochunked.yaml": [("cannot_judge", "asks for 1 NVIDIA GPU (requestGPU: 1")],
    # LMCache CPU/disk offloading (--kv-transfer-config, modelled); 8 GPUs of no named kind. SOURCES: cannot judge.
    "helm/prodstack-gke-llama33-70b-tp8-lmcache-disk.yaml": [("cannot_judge", "names no GPU kind kvplan can read")],
    # Mistral-7B-Instruct-v0.2 has no config here (LMCache offloading would stop it next). SOURCES: cannot judge.
    "helm/prodstack-lmcache-cpu-offload-mistral7b.yaml": [("cannot_judge", "Mistral-7B-Instruct-v0.2' " + NOT_FOUND)],
    # LoRA adapters (enableLoRA, modelled: docs/engines/features/lora.md); no GPU kind. SOURCES: cannot judge.
    "helm/prodstack-lora-llama31-8b.yaml": [("cannot_judge", "names no GPU kind kvplan can read")],
    # vllm/vllm-openai:v0.8.5 and V0 (v0: 1): releases kvplan does not model. SOURCES: needs --gpu (V100 in comments).
    "helm/prodstack-v100-tp4-qwen14b.yaml": [("cannot_judge", "vLLM 0.8.5 (image vllm/vllm-openai:v0.8.5)")],
    # Trainium: SOURCES "should report unsupported accelerator rather than a GPU verdict".
    "k8s/aioneks-lws-llama31-405b-trn1-neuron.yaml": [SKIP, ("cannot_judge", "runs on AWS Neuron devices (aws.amazon.com/neuron)")],
    # NVIDIA Dynamo's own launcher with its engine options in a file inside the image. SOURCES: fits; no GPU kind.
    "k8s/dynamo-graphdeployment-trtllm-qwen3-0.6b.yaml": [("cannot_judge", "an NVIDIA Dynamo worker")],
    # v0.8.5: not modelled (SOURCES' borderline L4 case needs that release's budget). Service and ConfigMap skipped.
    "k8s/gke-adk-llama31-8b-l4-configmap.yaml": [("cannot_judge", "vLLM 0.8.5"), SKIP, SKIP],
    # v0.10.0 pinned, judged by the 0.10 line's rules. SOURCES: 27B bf16 ~55 GB of 76 GB usable, ~19 GB left for a
    # 32K context at 4 sequences: fits.
    "k8s/gke-gemma-3-27b-it-a100-80gb.yaml": [("pass", "starts at max_model_len 32K"), SKIP],
    # SOURCES: 17.1 GB of weights on an L4's 21.6 GB usable; fp8 KV for 1,200 tokens is well under the rest: fits.
    "k8s/gke-gemma-7b-fp8kv-l4.yaml": [("pass", "starts at max_model_len 1,200"), SKIP],
    # google/gemma-7b-it has no config here (gemma-7b, the base model, has).
    "k8s/gke-gemma-7b-it-2x-a100.yaml": [("cannot_judge", "gemma-7b-it' " + NOT_FOUND), SKIP],
    # v0.8.5 (and a model folder on the host). SOURCES: fits; model only as a path.
    "k8s/gke-hdml-llama33-70b-localpath-4x-h100.yaml": [("cannot_judge", "vLLM 0.8.5"), SKIP],
    # v0.10.0; the Secret's unfilled {{HF_TOKEN}} placeholder is no YAML mapping kvplan reads: skipped, the rest judged.
    # SOURCES: ~800 GB bf16 / 8 = 100 GB per H200 of ~127 GB usable: fits.
    "k8s/gke-llama4-maverick-8x-h200.yaml": [("pass", "starts at max_model_len"), SKIP, ("skipped", "template placeholder")],
    "k8s/gke-lws-deepseek-r1-2x8-h100.yaml": [("cannot_judge", "vLLM 0.8.5"), SKIP],
    "k8s/gke-lws-llama31-405b-2x8-h100.yaml": [("cannot_judge", "vLLM 0.8.5"), SKIP],
    # ServiceAccount skipped; opt-125m has no config here. SOURCES: fits; no GPU kind.
    "k8s/llmd-modelservice-rendered-pd-opt125m.yaml": [SKIP] + [("cannot_judge", "facebook/opt-125m' " + NOT_FOUND)] * 2,
    # Llama-3.2-1B-Instruct is bundled (the 1B draft of docs/engines/features/speculative.md), LoRA is modelled; one
    # GPU of no named kind; ConfigMap skipped.
    "k8s/prodstack-gie-llama32-1b-lora-deployment.yaml": [("cannot_judge", "names no GPU kind kvplan can read"), SKIP],
    # a runtime template. SOURCES: nothing to judge.
    "kserve/clusterservingruntime-vllmserver.yaml": [("skipped", "a template for the services that use it")],
    # --backend=huggingface is transformers, not vLLM. SOURCES: not a vLLM engine.
    "kserve/isvc-hf-llama2-7b.yaml": [("cannot_judge", "--backend=huggingface")],
    # the model is in S3 (with --models-dir DIR/meta-llama--Meta-Llama-3.1-8B-Instruct it is judged on the g5.8xlarge A10G).
    "kserve/isvc-hf-llama31-8b-g5.yaml": [("cannot_judge", "s3://${bucket}/models/meta-llama--Meta-Llama-3.1-8B-Instruct")],
    # models on PVCs. SOURCES: cannot judge (no GPU kind).
    "kserve/llmisvc-deepseek-r1-dp32-ep.yaml": [("cannot_judge", "pvc://llm-test-pvc-deepseek")],
    "kserve/llmisvc-gpt-oss-20b.yaml": [("cannot_judge", "pvc://gpt-oss-20b-pvc")],
    # RedHatAI's Nemotron-3-Ultra FP8-block has no config here (hybrid MoE, P/D, offloading). SOURCES: needs --gpu.
    "kserve/llmisvc-nemotron3-ultra-550b-pd.yaml": [("cannot_judge", "NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8-block' " + NOT_FOUND)] * 2,
    # amd.com/gpu of no kind. SOURCES: fits; no card named.
    "kserve/llmisvc-qwen25-7b-amd.yaml": [("cannot_judge", "asks for 1 AMD GPU")],
    # kvCacheOffloading: KServe adds an OffloadingConnector --kv-transfer-config with the cpu tier's 10Gi (modelled).
    # SOURCES: cannot judge (no kind).
    "kserve/llmisvc-qwen25-7b-kv-offload.yaml": [("cannot_judge", "names no GPU kind kvplan can read")],
    # the distilled model has no config here (and nvidia-gpu-rtx4070-8gb is no catalog GPU).
    "kubeai/deepseek-r1-distill-qwen-1.5b-rtx4070.yaml": [("cannot_judge", "DeepSeek-R1-Distill-Qwen-1.5B' " + NOT_FOUND)],
    # options of vLLM releases before 0.10 (multi-step scheduling); KubeAI picks the image, the file pins no release.
    "kubeai/deepseek-r1-mi300x.yaml": [("cannot_judge", "vLLM 0.9.2 accepted it")],
    "kubeai/llama-3.1-405b-instruct-fp8-a100-80b.yaml": [("cannot_judge", "vLLM 0.9.2 accepted it")],
    # --enable-chunked-prefill=false: vLLM took a value up to 0.8.0 (StoreBoolean), refuses one since.
    "kubeai/llama-3.1-70b-instruct-fp8-l4.yaml": [("cannot_judge", "vLLM 0.8.0 accepted it")],
    # SOURCES: "a checker ignoring cpu-offload must say does not fit". kvplan models --cpu-offload-gb, but a GH200's
    # HBM is a NUMA node the host's page cache can occupy, and vLLM's cudaMemGetInfo counts it as used: what vLLM finds
    # free at start is not in the file: cannot judge.
    "kubeai/llama-3.3-70b-instruct-bf16-gh200.yaml": [("cannot_judge", "NUMA node the operating system allocates from")],
    "kubeai/llama-4-maverick-430k-h100.yaml": [("cannot_judge", "Llama-4-Maverick-17B-128E-Instruct-FP8' " + NOT_FOUND)],
    "kubeai/phi-4-bnb-4bit-l4.yaml": [("cannot_judge", "unsloth/phi-4-bnb-4bit' " + NOT_FOUND)],
    # a custom Serve application (its own code); Namespace and Secret skipped. SOURCES' "fits" reads the app's env vars.
    "rayserve/aioneks-rayservice-mistral7b-g5-karpenter.yaml": [SKIP, SKIP, ("cannot_judge", "a custom Ray Serve application")],
    "rayserve/gke-rayservice-llama3-8b-2x-l4.yaml": [("cannot_judge", "a custom Ray Serve application")],
    # DeepSeek-R1 (fp8, tests/data/public_models) TP8 x PP2 on 16 H100s (accelerator_type H100: SXM, PCIe or NVL,
    # judged on each): SOURCES ~690 GB / 16 = 43 GB per 80 GB card, fits.
    "rayserve/kuberay-deepseek-r1-tp8-pp2-h100.yaml": [("pass", "starts at max_model_len 16K")],
    "rayserve/kuberay-high-throughput-qwen35-4b-l4.yaml": [("cannot_judge", "Qwen/Qwen3.5-4b' " + NOT_FOUND)],
    # engine_kwargs.device is no engine argument of the vLLM kvplan judges by; Ray's image picks the release.
    "rayserve/kuberay-llm-serve-qwen25-7b.yaml": [("cannot_judge", "engine_kwargs.device"), SKIP],
    # bitsandbytes online quantization: not modelled (LMCache is).
    "script/lmcache-cpu-offload-llama31-8b-bnb.sh": [("cannot_judge", "online quantization 'bitsandbytes' is not modelled")],
    "script/multiagentsdebate-qwen3-14b-tp4.sh": [("cannot_judge", "Qwen/Qwen3-14B' " + NOT_FOUND)],
    # VLLM_USE_V1=0 (and a draft model): the V0 engine is not modelled.
    "script/ssd-llama31-70b-draft-1b-specdec-tp4.sh": [("cannot_judge", "VLLM_USE_V1=0")],
    # lmsysorg/sglang:v0.4.5-cu125 pins SGLang 0.4.5 (modelled by SGLang's release registry); the distilled model
    # has no config here. SOURCES: fits; no GPU kind.
    "sglang/hidden-capacity-r1-distill-1.5b-pinned.sh": [("cannot_judge", "DeepSeek-R1-Distill-Qwen-1.5B' " + NOT_FOUND)],
    # the model is a hostPath folder. SOURCES: cannot judge the model.
    "sglang/k8s-sglang-distributed-sts-tp16-ep16.yaml": [("cannot_judge", "'/llm-folder' is on the serving host"), SKIP, SKIP],
    "sglang/k8s-sglang-llama31-8b-deployment.yaml": [SKIP, ("cannot_judge", "asks for 1 NVIDIA GPU (resources.limits"), SKIP],
    "sglang/marie-qwq-32b-fp8-dp4-tp2-8gpu.sh": [("cannot_judge", "Qwen/QwQ-32B' " + NOT_FOUND)],
    # a BF16 conversion in a local folder made by `setup`. SOURCES: model given as a local dir.
    "skypilot/deepseek-r1-671b-4x8-a100-sglang.yaml": [("cannot_judge", "'DeepSeek-R1-BF16' is on the serving host")],
    # vllm==0.10.1+gptoss on one H100 at the model's 131,072-token default. SOURCES estimated "fits" from the MXFP4
    # checkpoint (~63 GB), but users' own logs on H100 say otherwise: vLLM issue #23278 (0.10.1: "Model loading took
    # 65.9651 GiB", "Available KV cache memory: -2.14 GiB", the engine failed to start) and #27508 (at 0.95: 1.71 GiB,
    # not enough for one 131,072-token request); both are in tests/data/vllm_logs_public. kvplan says no.
    "skypilot/gpt-oss-120b-1x-h100-vllm.sky.yaml": [("fail", "no memory is left for the KV cache")],
    # v0.10.0, TP 8 x PP 2 from SkyPilot's variables. SOURCES: ~64 GB of fp8 weights per H100 of 72 GB usable: fits.
    "skypilot/kimi-k2-2x8-h100-vllm-pp.sky.yaml": [("pass", "starts at max_model_len 32K")],
    # five accelerator choices, the FP8 checkpoint has no config here.
    "skypilot/llama4-maverick-fp8-8gpu-anyof.yaml": [("cannot_judge", "Llama-4-Maverick-17B-128E-Instruct-FP8' " + NOT_FOUND)] * 5,
    # Mixtral-8x7B (bundled) with TP = the GPUs of each choice. SOURCES: fits on every option.
    "skypilot/mixtral-8x7b-service-anyof-accels.yaml": [("pass", "starts at max_model_len 32K")] * 7,
    "trtllm/ctx-extra-llm-api-config.yaml": [("skipped", "names no model")],
    # TinyLlama's config is in public_models; each server group is judged with its cache transceiver (two 512 MiB
    # buffers after the pool). SOURCES: fits; no GPU kind.
    "trtllm/disagg-config-tinyllama.yaml": [("cannot_judge", "the file names no GPU")] * 2,
    # TensorRT-LLM's CI configs name local checkpoint folders (DeepSeek-V3-Lite is not public): cannot judge the model
    "trtllm/disagg-config-ctxtp2-gentp2-deepseek-v3-lite-adp-mtp.yaml": [("cannot_judge", "DeepSeek-V3-Lite/fp8' " + NOT_FOUND)] * 2,
    "trtllm/disagg-config-ctxtp2-gentp2-llama31-8b-ucx.yaml": [("cannot_judge", "Llama-3.1-8B-Instruct' " + NOT_FOUND)] * 2,
    "trtllm/disagg-config-ctxtp4-gentp4-deepseek-r1-fp4-mtp.yaml": [("cannot_judge", "DeepSeek-R1-0528-FP4-v2' " + NOT_FOUND)] * 2,
    "trtllm/dynamo-deepseek-r1-wide-ep-decode-tp16-ep16.yaml": [("skipped", "names no model")],
    "trtllm/dynamo-engine-config-agg-nomodel.yaml": [("skipped", "names no model")],
    "trtllm/dynamo-llama4-maverick-eagle3-agg-tp4.yaml": [("skipped", "names no model")],
    # Triton's server.py: the model comes from install_model.sh. SOURCES: cannot judge the model.
    "trtllm/gke-lws-tensorrt-triton-pp8-tp2-h100.yaml": [("cannot_judge", "python3 ./server.py leader"), SKIP],
    # the LLM-API YAML (it overrides the flags) is not in the corpus. SOURCES' "does not fit on 8 x H100" needs it.
    "trtllm/trtllm-serve-deepseek-r1-tp8-ep8.sh": [("cannot_judge", "--extra_llm_api_options ./extra-llm-api-config.yml")],
    "vllm-config/gemma4-e4b-qat-sleepmode.yaml": [("cannot_judge", "gemma-4-E4B-it-qat-mobile-ct' " + NOT_FOUND)],
    "vllm-config/paddleocr-vl-underscore-keys.yaml": [("skipped", "names no model")],
    "vllm-config/pesticide-qwen25-7b-bnb-lora-tp2.yaml": [("cannot_judge", "'/data/lyl/models/qwen2.5-7B' is on the serving host")],
    "vllm-config/vllm-server-defaults-nomodel.yaml": [("skipped", "names no model")],
}

# With --gpu h100: these become judged (the rest are as above, their missing input is not the GPU).
WITH_H100: dict[str, list[tuple[str, str]]] = {
    "compose/sglang-llama31-8b-device0.yaml": [("pass", "starts at max_model_len 128K")],  # 16 GB on 80 GB
    "dockerfile/koyeb-llama31-8b-entrypoint.Dockerfile": [("pass", "starts at max_model_len 128K")],  # ~33 GB
    "dockerfile/rubric-sglang-qwen3-30b-a3b-cmd.Dockerfile": [("pass", "starts at max_model_len 40K")],  # 61 GB
    "helm/prodstack-gcp-llama31-8b-nochunked.yaml": [("pass", "starts at max_model_len 4K")],
    # the file asks for AMD GPUs; judged on the H100 given, which the verdict notes
    "kserve/llmisvc-qwen25-7b-amd.yaml": [("pass", "starts at max_model_len 32K")],
    "sglang/k8s-sglang-llama31-8b-deployment.yaml": [SKIP, ("pass", "starts at max_model_len 128K"), SKIP],
    # the modelled launch options, on the H100 given (SOURCES: each fits its stated GPUs)
    "helm/prodstack-disagg-prefill-llama31-8b.yaml": [("pass", "starts at max_model_len 32,000")] * 2,
    # 1.1B on 80 GB, each group at its own fraction (context 0.2, generation 0.25), the transceiver's buffers beside it
    "trtllm/disagg-config-tinyllama.yaml": [("pass", "starts at max_model_len 2K")] * 2,
    "helm/prodstack-gke-llama33-70b-tp8-lmcache-disk.yaml": [("pass", "starts at max_model_len 128K")],
    "helm/prodstack-lora-llama31-8b.yaml": [("pass", "starts at max_model_len 4K")],
    "k8s/prodstack-gie-llama32-1b-lora-deployment.yaml": [("pass", "starts at max_model_len 128K"), SKIP],
    "kserve/llmisvc-qwen25-7b-kv-offload.yaml": [("pass", "starts at max_model_len 32K")],
    # the files that name their GPU (the GH200 of kubeai/llama-3.3-70b-instruct-bf16-gh200.yaml, the 8 H200s of
    # k8s/gke-llama4-maverick-8x-h200.yaml) keep it: a file's own GPU always wins, so their verdicts are as above
}


def _check(*extra):
    options = deployment.CheckOptions(models_dirs=(str(MODELS),), **dict(extra))
    return run.run_check([str(CORPUS)], options)


@pytest.fixture(scope="module")
def report():
    return _check()


def by_file(report) -> dict[str, list]:
    out = collections.defaultdict(list)
    for v in report.verdicts:
        out[Path(v.source).relative_to(CORPUS).as_posix()].append(v)
    return out


def test_every_file_of_the_corpus_has_a_hand_judgement():
    files = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file() and p.suffix != ".md")
    assert files == sorted(EXPECTED) and len(files) == 81


def test_every_verdict_is_the_hand_judged_one(report):
    got = by_file(report)
    for name, expected in EXPECTED.items():
        verdicts = got[name]
        assert [v.status for v in verdicts] == [s for s, _ in expected], (name, [(v.status, v.reason) for v in verdicts])
        for v, (_, needle) in zip(verdicts, expected):
            assert needle in v.reason, (name, needle, v.reason)


def test_with_a_gpu_the_files_that_only_lacked_one_are_judged():
    got = by_file(_check(("gpu", "h100")))
    for name, expected in {**EXPECTED, **WITH_H100}.items():
        verdicts = got[name]
        assert [v.status for v in verdicts] == [s for s, _ in expected], (name, [(v.status, v.reason) for v in verdicts])
        for v, (_, needle) in zip(verdicts, expected):
            assert needle in v.reason, (name, needle, v.reason)
    amd = got["kserve/llmisvc-qwen25-7b-amd.yaml"][0]
    assert any("asks for AMD GPUs" in n for n in amd.notes)


def test_read_directly_and_nothing_invalid(report):
    unrecognised = [v for v in report.verdicts if "not a deployment format kvplan reads" in v.reason]
    files = {v.source for v in report.verdicts}
    assert len(files) == 81 and not unrecognised  # >= 90% asked; every file is read by its format's reader
    assert report.invalid == 0
    # one deployment fails (gpt-oss-120b on one H100, as users' logs show) and 1 wins over cannot judge's 3
    assert report.failed == 1 and report.exit_code == 1


def test_every_judged_verdict_says_where_its_inputs_came_from(report):
    for v in report.verdicts:
        if v.status == "pass":
            assert v.origins.gpu and v.origins.model and v.origins.engine_release, v
    ray = by_file(report)["rayserve/kuberay-deepseek-r1-tp8-pp2-h100.yaml"][0]
    assert ray.origins.gpu == "llm_configs[0] accelerator_type=H100"
    assert ray.origins.gpus == "worker groups gpu-group: 2 x 8 GPUs"
    assert ray.origins.model.startswith("--models-dir") and "deepseek-ai--DeepSeek-R1" in ray.origins.model
    assert "h100-sxm-80gb, h100-pcie-80gb, h100-nvl-94gb" in ray.notes[0]  # judged on each H100 the label allows
