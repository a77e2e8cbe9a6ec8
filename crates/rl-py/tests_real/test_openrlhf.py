"""rlvr.openrlhf through OpenRLHF's own loader (0.11.2, installed with --no-deps plus aiohttp;
scripts/test-python-real.sh): ``SingleTurnAgentExecutor(remote_rm_url=<file>.py)`` loads
``reward_func`` by path as OpenRLHF's trainer does, and its ``_fetch_rewards_via_func`` calls it
per sample through ``asyncio.to_thread`` with the decoded query (prompt + response, special tokens
kept), the prompt and the label. Expected verdicts are hand-made: 4 is right for 2+2, 5 is not.
"""

import asyncio

import pytest

torch = pytest.importorskip("torch")
agent = pytest.importorskip("openrlhf.utils.agent")

import rlvr.openrlhf  # noqa: E402

PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


def test_openrlhfs_loader_and_call_path_give_the_verdicts():
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=rlvr.openrlhf.__file__)
    assert executor.reward_func is not None
    queries = [PROMPT + "So the answer is \\boxed{4}<|im_end|>", PROMPT + "It is \\boxed{5}<|im_end|>",
               PROMPT + "no answer<|endoftext|>"]
    out = asyncio.run(executor._fetch_rewards_via_func(queries, [PROMPT] * 3, ["4", "4", "4"]))
    assert len(out) == 3
    rewards = [float(o["rewards"][0]) for o in out]
    assert rewards == [1.0, 0.0, 0.0]
    for o in out:
        assert isinstance(o["rewards"], torch.Tensor) and isinstance(o["scores"], torch.Tensor)
        assert set(o["extra_logs"]) >= {"acc", "failed"}
