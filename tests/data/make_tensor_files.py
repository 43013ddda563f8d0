#!/usr/bin/env python3
"""Writes the tensor-file fixtures of tests/unit/inputs/test_tensor_file.cpp and
tests/unit/torchside/test_inputs.cpp into tests/data/tensor_files/ (committed; run
again only to change them). Needs torch, safetensors and transformers (with
tokenizers). Every file holds the same two tensors where it holds tensors:

  a = arange(6, float32).reshape(2, 3)    b = tensor([1, 0, 1], int64)

tf_plain.pt         torch.save((a, b))
tf_legacy.pt        the same, _use_new_zipfile_serialization=False
tf.safetensors      safetensors.torch.save_file({"b": b, "a": a}) (keys written sorted)
tf_batch.pt         a tokenizer's BatchEncoding as it comes (its tokenizers.Encoding objects too)
tf_ordered.pt       OrderedDict(a=a, b=b)
tf_subclass.pt      a dict subclass holding a and b
tf_parameter.pt     (nn.Parameter(a), b)
tf_runs_code.pt     (a, an object whose pickle calls os.system): must be refused, never loaded
tf_object.pt        (a, a plain object): not a mapping, refused
"""

import collections
import os
import sys

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensor_files")


class Batch(dict):
    pass


class RunsCode:
    def __reduce__(self):
        return (os.system, ("echo this pickle ran code",))


class Plain:
    def __init__(self):
        self.x = 1


def tokenized():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, "hello": 2, "world": 3, "a": 4}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    t = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]")
    return t(["hello world", "a"], return_tensors="pt", padding=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    b = torch.tensor([1, 0, 1], dtype=torch.int64)
    p = lambda name: os.path.join(OUT, name)
    torch.save((a, b), p("tf_plain.pt"))
    torch.save((a, b), p("tf_legacy.pt"), _use_new_zipfile_serialization=False)
    save_file({"b": b, "a": a}, p("tf.safetensors"))
    torch.save(tokenized(), p("tf_batch.pt"))
    torch.save(collections.OrderedDict(a=a, b=b), p("tf_ordered.pt"))
    torch.save(Batch(a=a, b=b), p("tf_subclass.pt"))
    torch.save((torch.nn.Parameter(a), b), p("tf_parameter.pt"))
    torch.save((a, RunsCode()), p("tf_runs_code.pt"))
    torch.save((a, Plain()), p("tf_object.pt"))
    print("wrote", sorted(os.listdir(OUT)), file=sys.stderr)


if __name__ == "__main__":
    main()
