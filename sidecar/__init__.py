"""CPU-only OpenAI-compatible sidecars in front of vLLM, SGLang and TRT-LLM engines."""
