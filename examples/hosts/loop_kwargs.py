"""A loop that calls a package with keyword arguments, as a tokenizer's batch is passed.

    python loop_kwargs.py PACKAGE

Loads PACKAGE (the kwargs_mask_nan example: attention exported with input_ids, attention_mask and
token_type_ids as keywords) and calls it three times with model(**batch); in batch 2 one sequence is all
padding (its attention_mask row is 0), and its softmax makes NaN.
"""
import sys

import torch


def main():
    model = torch._inductor.aoti_load_package(sys.argv[1])
    torch.manual_seed(0)
    for step in range(1, 4):
        batch = {
            "input_ids": torch.randint(0, 32, (2, 8)),
            "token_type_ids": torch.randint(0, 2, (2, 8)),
            "attention_mask": torch.ones(2, 8, dtype=torch.int64),
        }
        batch["token_type_ids"][:, 0] = 1
        if step == 2:
            batch["attention_mask"][1] = 0
        out = model(**batch)
        while isinstance(out, (list, tuple, dict)):  # the model's own output structure
            out = list(out.values())[0] if isinstance(out, dict) else out[0]
        print(f"step {step}: {int(torch.isnan(out).sum())} NaN in the outputs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
