"""Fixtures for rl-loss's `bradley_terry`: TRL's own RewardTrainer.compute_loss on given rewards.

Calls `trl.RewardTrainer.compute_loss` (TRL 1.16) unbound, with a stand-in `self` (the training
mode, `args.center_rewards_coefficient`, an accelerator whose gathers return their input, the
metric store) and a stand-in model whose `logits` are the given rewards `[chosen; rejected]`
(what a sequence classifier with one label returns, `[2B, 1]`), in float64. Records the loss, its
gradient with respect to the rewards (torch autograd) and TRL's logged accuracy and margin.
Cases: plain, with a per-pair margin, with centring (coefficient 0.01, TRL's suggested value),
both, ties, and a large-gap pair (logsigmoid's stable branch).

    $HOME/.cache/rlvr-trl/venv/bin/python tools/trl/gen_reward_loss_fixtures.py \
        crates/rl-loss/tests/data/bradley_terry_trl.json
"""

import json
import sys
from collections import defaultdict
from types import SimpleNamespace

import torch
import trl
from trl import RewardTrainer


class Accelerator:
    def gather(self, t):
        return t

    def gather_for_metrics(self, t):
        return t


def case(name, chosen, rejected, margin=None, center=None):
    rewards = torch.tensor(chosen + rejected, dtype=torch.float64).unsqueeze(-1).requires_grad_(True)
    stub = SimpleNamespace(
        model=SimpleNamespace(training=True),
        args=SimpleNamespace(center_rewards_coefficient=center),
        accelerator=Accelerator(),
        _metrics={"train": defaultdict(list)},
        _total_train_tokens=0,
        _tp_size=1,
    )
    inputs = {"attention_mask": torch.ones(2 * len(chosen), 3, dtype=torch.long)}
    if margin is not None:
        inputs["margin"] = torch.tensor(margin, dtype=torch.float64)
    model = lambda **kw: SimpleNamespace(logits=rewards)  # noqa: E731
    loss = RewardTrainer.compute_loss(stub, model, inputs)
    loss.backward()
    g = rewards.grad.squeeze(-1).tolist()
    n = len(chosen)
    m = stub._metrics["train"]
    return {
        "name": name,
        "chosen": chosen,
        "rejected": rejected,
        "margin": margin,
        "center_coefficient": center,
        "loss": loss.item(),
        "grad_chosen": g[:n],
        "grad_rejected": g[n:],
        "accuracy": m["accuracy"][0],
        "mean_margin": m["margin"][0],
    }


def main(out):
    gen = torch.Generator().manual_seed(20261207)

    def rnd(n, scale):
        return (torch.randn(n, generator=gen, dtype=torch.float64) * scale).tolist()

    cases = [
        case("plain", rnd(6, 1.5), rnd(6, 1.5)),
        case("margin", rnd(5, 1.0), rnd(5, 1.0), margin=[0.0, 0.5, 1.0, 2.0, 0.25]),
        case("centered", [2.0, 3.5, -1.0, 0.5], [1.0, 3.0, -2.5, 1.5], center=0.01),
        case("margin_and_center", rnd(4, 2.0), rnd(4, 2.0), margin=[1.0, 0.0, 0.5, 3.0], center=0.01),
        case("ties", [1.0, 0.0, -0.5], [1.0, 0.0, -0.5]),
        case("large_gap", [40.0, -30.0], [-40.0, 30.0]),
    ]
    data = {
        "source": f"trl {trl.__version__} RewardTrainer.compute_loss (stand-in self and model), "
        "float64, gradient by torch autograd",
        "command": "$HOME/.cache/rlvr-trl/venv/bin/python tools/trl/gen_reward_loss_fixtures.py "
        "crates/rl-loss/tests/data/bradley_terry_trl.json",
        "cases": cases,
    }
    with open(out, "w") as f:
        json.dump(data, f, indent=1)
    print(f"{out}: {len(cases)} cases")


if __name__ == "__main__":
    main(sys.argv[1])
