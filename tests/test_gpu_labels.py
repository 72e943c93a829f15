"""kvplan/data/gpu_labels.yaml: GPU labels of clouds and operators -> the GPU catalog, and how check reads them."""

import re

import pytest

from kvplan.check import gpu_labels, gpus
from kvplan.check.gpus import GpuEvidence, Label
from kvplan.core.errors import UnsupportedError
from kvplan.model import catalog


def entries():
    return [(key, value, entry) for key, (_, values) in gpu_labels._table().items() for value, entry in values.items()]


def test_every_label_maps_to_catalog_gpus_and_says_where_it_comes_from():
    names = {g.name for g in catalog.gpus()}
    missing = sorted({(value, n) for _, value, e in entries() for n in e.names if n not in names})
    assert not missing, f"labels naming GPUs the catalog does not have: {missing}"
    assert all(e.source for _, _, e in entries())


def test_ray_accelerator_types_follow_rays_own_rule():
    """Ray's accelerator_type is the first word after the vendor in the NVML name (NVIDIA_GPU_NAME_PATTERN of
    python/ray/_private/accelerators/nvidia_gpu.py): applied to the catalog's NVML names, it gives the table."""
    pattern = re.compile(r"\w+\s+([A-Z0-9]+)")
    derived: dict[str, set[str]] = {}
    for gpu in catalog.gpus():
        for alias in gpu.aliases:
            if gpu.vendor == "nvidia" and alias.startswith(("NVIDIA ", "Tesla ")):
                m = pattern.match(alias)
                if m:
                    derived.setdefault(m.group(1), set()).add(gpu.name)
    _, table = gpu_labels._table()["accelerator_type"]
    for label, names in derived.items():
        if label in table:
            assert set(table[label].names) == names, (label, names)
    assert set(table["H100"].names) == {"h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb"}


def test_gpu_feature_discovery_product_labels_are_the_nvml_names_with_dashes():
    """GFD's nvidia.com/gpu.product is the NVML name with spaces -> '-' (k8s-device-plugin internal/lm/resource.go)."""
    for gpu in catalog.gpus():
        for alias in gpu.aliases:
            if alias.startswith(("NVIDIA ", "Tesla ")):
                entry = gpu_labels.lookup("nvidia.com/gpu.product", alias.replace(" ", "-"))
                assert entry.names == (gpu.name,), alias
    with pytest.raises(UnsupportedError, match="time-sliced"):  # shared with other pods: its memory is not the card's
        gpu_labels.lookup("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-SHARED")
    with pytest.raises(UnsupportedError, match="MIG"):
        gpu_labels.lookup("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")


def test_instance_types_carry_their_gpu_count():
    assert (gpu_labels.lookup("node.kubernetes.io/instance-type", "p5.48xlarge").names,
            gpu_labels.lookup("node.kubernetes.io/instance-type", "p5.48xlarge").count) == (("h100-sxm-80gb",), 8)
    assert gpu_labels.lookup("node.kubernetes.io/instance-type", "g5.8xlarge").count == 1  # one A10G (corpus: KServe sample)
    assert gpu_labels.lookup("node.kubernetes.io/instance-type", "Standard_ND96isr_H100_v5").count == 8
    assert gpu_labels.lookup("karpenter.k8s.aws/instance-type", "a3-highgpu-8g").names == ("h100-sxm-80gb",)


def test_choosing_intersects_labels_and_never_guesses():
    karpenter_80 = GpuEvidence(labels=(Label("karpenter.k8s.aws/instance-gpu-name", "a100", "nodeSelector"),
                                       Label("karpenter.k8s.aws/instance-gpu-memory", "81920", "nodeSelector")))
    assert [h.name for h in gpus.choose(karpenter_80, None, None, where="x").hardware] == ["a100-sxm-80gb"]
    ambiguous = gpus.choose(GpuEvidence(labels=(Label("accelerator_type", "A100", "llm_configs[0]"),)), None, None, where="x")
    assert len(ambiguous.hardware) == 3  # every A100: judged on each
    with pytest.raises(UnsupportedError, match="catalog does not have"):
        gpus.choose(GpuEvidence(labels=(Label("cloud.google.com/gke-accelerator", "nvidia-tesla-k80", "nodeSelector"),)),
                    None, None, where="x")
    with pytest.raises(UnsupportedError) as err:
        gpus.choose(GpuEvidence(count=8, count_where="resources.limits nvidia.com/gpu: 8", vendor="nvidia"), None, None, where="x")
    assert "asks for 8 NVIDIA GPUs" in err.value.what and "--gpu NAME" in err.value.one_line()  # only a count: exit 3
    with pytest.raises(UnsupportedError, match="not on a GPU"):
        gpus.choose(GpuEvidence(other="AWS Neuron devices (aws.amazon.com/neuron)"), None, None, where="x")


def test_the_files_own_gpu_wins_over_the_gpu_flag_which_is_reported():
    h200 = catalog.find_gpu("h200")
    from kvplan.engines.api import Hardware

    l4 = GpuEvidence(labels=(Label("cloud.google.com/gke-accelerator", "nvidia-l4", "nodeSelector"),))
    choice = gpus.choose(l4, Hardware(h200.name, h200.capacity_bytes), "--gpu h200-141gb", where="x")
    assert [h.name for h in choice.hardware] == ["l4-24gb"]
    assert choice.origin == ("nodeSelector cloud.google.com/gke-accelerator=nvidia-l4 (the file's own; --gpu h200-141gb "
                             "not used)")
    assert "--gpu h200-141gb is not used" in choice.notes[0]
    # a label that leaves several cards open is narrowed by a --gpu among them; a file naming none takes --gpu
    h100 = catalog.find_gpu("h100-nvl-94gb")
    ray = GpuEvidence(labels=(Label("accelerator_type", "H100", "llm_configs[0]"),))
    narrowed = gpus.choose(ray, Hardware(h100.name, h100.capacity_bytes), "--gpu h100-nvl-94gb", where="x")
    assert [h.name for h in narrowed.hardware] == ["h100-nvl-94gb"] and not narrowed.notes
    bare = gpus.choose(GpuEvidence(count=1), Hardware(h200.name, h200.capacity_bytes), "--gpu h200-141gb", where="x")
    assert [h.name for h in bare.hardware] == ["h200-141gb"] and bare.origin == "--gpu h200-141gb"


def test_an_affinity_with_several_values_allows_each():
    """Node affinity `In: [a, b]` lets the pod land on either: the union of what each value names."""
    from kvplan.check.readers import kubernetes as k8s

    pod = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                               "values": ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"]}]}]}}}}
    labels = k8s.node_labels(pod)
    choice = gpus.choose(GpuEvidence(labels=labels), None, None, where="x")
    assert [h.name for h in choice.hardware] == ["h100-sxm-80gb", "h200-141gb"]
    assert choice.origin == "node affinity nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3|NVIDIA-H200"
    # two terms are alternatives Kubernetes ORs: not read (no guess at which one a pod gets)
    two = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H200"]}]},
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L4"]}]}]}}}}
    assert k8s.node_labels(two) == ()
