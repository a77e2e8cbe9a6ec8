"""Fixtures for rl-loss's `generalized_jsd`: TRL's own GKD loss on random logits.

Calls `trl.experimental.gkd.GKDTrainer.generalized_jsd_loss` (TRL 1.16) in float64 with
labels (-100 = not a completion token, the "batchmean" reduction divides by the completion
tokens) and records the loss and its gradient with respect to the student's logits.

    $HOME/.cache/rlvr-trl/venv/bin/python tools/trl/gen_gkd_fixtures.py \
        crates/rl-loss/tests/data/gkd_trl.json
"""

import json
import sys

import torch
import trl
from trl.experimental.gkd import GKDTrainer


def case(name, gen, batch, seq, vocab, beta, temperature, scale, masked):
    student = (torch.randn(batch, seq, vocab, generator=gen, dtype=torch.float64) * scale)
    teacher = (torch.randn(batch, seq, vocab, generator=gen, dtype=torch.float64) * scale)
    labels = torch.zeros(batch, seq, dtype=torch.long)
    mask = torch.ones(batch, seq, dtype=torch.bool)
    for b, m in masked:
        mask[b, m] = False
    labels[~mask] = -100
    student.requires_grad_(True)
    loss = GKDTrainer.generalized_jsd_loss(
        student, teacher, labels=labels, beta=beta, temperature=temperature
    )
    (grad,) = torch.autograd.grad(loss, student)
    return {
        "name": name,
        "beta": beta,
        "temperature": temperature,
        "rows": batch * seq,
        "vocab": vocab,
        "student": student.detach().reshape(-1).tolist(),
        "teacher": teacher.reshape(-1).tolist(),
        "mask": mask.reshape(-1).tolist(),
        "loss": loss.item(),
        "grad": grad.reshape(-1).tolist(),
    }


def main(out):
    gen = torch.Generator().manual_seed(2026)
    cases = [
        case("reverse_kl", gen, 2, 3, 37, 1.0, 1.0, 2.0, [(1, 2)]),
        case("forward_kl", gen, 2, 3, 37, 0.0, 1.0, 2.0, [(0, 0)]),
        case("jsd_half", gen, 2, 3, 37, 0.5, 1.0, 2.0, []),
        case("jsd_0.1_t2", gen, 3, 2, 41, 0.1, 2.0, 3.0, [(2, 1)]),
        case("jsd_0.9_t0.7", gen, 1, 4, 29, 0.9, 0.7, 1.0, [(0, 3)]),
        case("reverse_kl_wide", gen, 1, 3, 50, 1.0, 1.0, 12.0, []),
        case("forward_kl_t2", gen, 2, 2, 23, 0.0, 2.0, 5.0, [(1, 0), (1, 1)]),
    ]
    doc = {
        "source": f"TRL {trl.__version__} GKDTrainer.generalized_jsd_loss, torch "
        f"{torch.__version__}, float64, tools/trl/gen_gkd_fixtures.py",
        "cases": cases,
    }
    with open(out, "w") as f:
        json.dump(doc, f)
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main(sys.argv[1])
