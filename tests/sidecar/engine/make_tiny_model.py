"""Make a tiny Qwen3 model and its tokenizer from a fixed seed: no download.

Run with the engine venv's Python (it has torch, transformers and tokenizers):

    python make_tiny_model.py OUT_DIR TEXT_FILE...

2 layers, hidden size 128, random weights (seed 0), a byte-level BPE of about 4,096 tokens
trained on the given text files, the Qwen3 family's special tokens as added tokens and a chat
template written for this harness (`chat_template.jinja` beside this file). About 2 MB.
Standalone on purpose: the engine venv does not have this project installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 0
VOCAB = 4096
# Qwen3's added tokens: control tokens are special (dropped by skip_special_tokens); the
# reasoning and tool-call markup is not, so it stays in the text as in the real family.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKUP = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]


def train_tokenizer(texts: list[str]) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def main(out: Path, sources: list[Path]) -> None:
    import torch
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(sources)]
    raw = train_tokenizer(texts)
    raw.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])  # type: ignore[attr-defined]
    raw.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP])  # type: ignore[attr-defined]
    template = (HERE / "chat_template.jinja").read_text(encoding="utf-8")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=template,
        model_max_length=32768,
    )
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(out))

    vocab = (len(tokenizer) + 63) // 64 * 64
    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        torch_dtype="bfloat16",
    )
    torch.manual_seed(SEED)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "sidecar-forge-tiny.json").write_text(
        json.dumps({"seed": SEED, "vocab": vocab, "sources": [p.name for p in sorted(sources)]})
    )


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: make_tiny_model.py OUT_DIR TEXT_FILE...")
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
