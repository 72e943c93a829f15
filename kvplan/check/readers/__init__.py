"""One reader per deployment format. Each turns one document (or command line) into a Deployment, raising
KvplanError with the file and key when it cannot; `kvplan check` judges what they return.

- kvplan_yaml: kvplan's own deployment YAML (schema: kvplan/data/deployment.schema.json);
- vllm_serve: a `vllm serve --config` YAML file, or a `vllm serve` command line (--vllm-args).
"""
