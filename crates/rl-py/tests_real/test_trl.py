"""DA3PO inside the real TRL (scripts/test-python-real.sh): a tiny random Qwen3 and a digit
tokenizer built here, two optimizer steps of rlvr.trl.da3po_trainer_class() on the CPU.

Independent reference: TRL's own GRPO advantages of the same batch, which the trainer keeps in
``da3po_last["trl_advantages"]`` before replacing them. At lam = 1 DA3PO is GRPO, so the
advantages trained on must equal TRL's; at lam = 2 the amplified ones (correct responses of
groups with pass rate < tau) are exactly twice TRL's and the others equal.
"""

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")

import numpy as np  # noqa: E402

from rlvr.trl import TRL_VERSIONS, da3po_trainer_class  # noqa: E402

G = 4


def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    vocab = {c: i for i, c in enumerate("0123456789+=")}
    vocab["<|im_end|>"] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab, unk_token="<|im_end|>"))
    t.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    t.decoder = decoders.Fuse()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=t, eos_token="<|im_end|>", pad_token="<|im_end|>"
    )


def model(vocab: int, seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.Qwen3Config(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=64,
        tie_word_embeddings=True,
    )
    return transformers.Qwen3ForCausalLM(cfg)


def has_one(completions, **kwargs):
    """1 when the completion contains the digit 1: a reward that mixes within groups."""
    return [1.0 if "1" in c else 0.0 for c in completions]


def train(tmp_path, **da3po):
    tok = tokenizer()
    data = datasets.Dataset.from_dict(
        {"prompt": [f"{a}+{b}=" for a, b in zip(range(10, 26), range(30, 46))]}
    )
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, seed=0, num_generations=G,
        per_device_train_batch_size=4 * G, max_completion_length=6, learning_rate=1e-3,
        use_cpu=True, bf16=False, report_to="none", save_strategy="no", logging_steps=1,
        disable_tqdm=True,
    )
    batches = []

    class Recorder(transformers.TrainerCallback):
        def on_step_end(self, *a, **kw):
            batches.append(dict(trainer.da3po_last))

    trainer = da3po_trainer_class()(
        model=model(len(tok)), reward_funcs=[has_one], args=args, train_dataset=data,
        processing_class=tok, callbacks=[Recorder()], **da3po,
    )
    trainer.train()
    assert len(batches) == 2
    return batches


def test_version_range_covers_the_installed_trl():
    from rlvr.trl import _version_tuple

    assert _version_tuple(TRL_VERSIONS[0]) <= _version_tuple(trl.__version__) < _version_tuple(TRL_VERSIONS[1])


def test_at_lambda_one_the_advantages_are_trls(tmp_path):
    for b in train(tmp_path, lam=1.0):
        np.testing.assert_allclose(b["advantages"], b["trl_advantages"], rtol=1e-6, atol=1e-6)


def test_amplified_advantages_are_lambda_times_trls(tmp_path):
    seen = 0
    for b in train(tmp_path, lam=2.0, tau=0.5):
        adv, ref, amp = (np.array(b[k]) for k in ("advantages", "trl_advantages", "amplified"))
        r = np.array(b["rewards"]).reshape(-1, G)
        # Hand rule: a correct response (reward 1) of a group with 0 < pass rate < 0.5.
        p = r.mean(axis=1, keepdims=True)
        expect = ((r > 0) & (p > 0) & (p < 0.5)).reshape(-1)
        np.testing.assert_array_equal(amp, expect)
        np.testing.assert_allclose(adv[amp], 2.0 * ref[amp], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(adv[~amp], ref[~amp], rtol=1e-6, atol=1e-6)
        seen += int(amp.sum())
    assert seen > 0, "no amplified response in two batches: the test would not test DAA"


def test_dynamic_sampling_drops_uniform_groups_from_the_loss(tmp_path):
    uniform = 0
    for b in train(tmp_path, lam=2.0, dynamic_sampling=True):
        r = np.array(b["rewards"]).reshape(-1, G)
        keep = ~(r == r[:, :1]).all(axis=1)
        mask = np.array(b["completion_mask"]).reshape(-1, G, len(b["completion_mask"][0]))
        assert (mask[~keep] == 0).all()
        assert (mask[keep].sum(axis=-1) > 0).all()
        uniform += int((~keep).sum())
    assert uniform > 0, "no uniform group in two batches: the test would not test the filter"


def test_unsupported_reward_scaling_is_refused(tmp_path):
    tok = tokenizer()
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=1, num_generations=G, per_device_train_batch_size=G,
        use_cpu=True, report_to="none", scale_rewards="batch",
    )
    data = datasets.Dataset.from_dict({"prompt": ["1+1="] * 4})
    with pytest.raises(ValueError, match="scale_rewards='group'"):
        da3po_trainer_class()(model=model(len(tok)), reward_funcs=[has_one], args=args,
                              train_dataset=data, processing_class=tok)


def test_rlvr_reward_inside_trls_own_grpo_trainer(tmp_path):
    """Two steps of TRL's own GRPOTrainer with rlvr.trl.accuracy_reward (math verifier, 1/0):
    TRL calls it with its real arguments and logs its mean, a fraction in [0, 1]. The gold
    answers are the prompts' sums; a right answer from a random model is rare but allowed."""
    from rlvr.trl import accuracy_reward

    tok = tokenizer()
    pairs = list(zip(range(10, 26), range(30, 46)))
    data = datasets.Dataset.from_dict(
        {"prompt": [f"{a}+{b}=" for a, b in pairs], "solution": [str(a + b) for a, b in pairs]}
    )
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, seed=0, num_generations=G,
        per_device_train_batch_size=4 * G, max_completion_length=6, use_cpu=True, bf16=False,
        report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True,
    )
    trainer = trl.GRPOTrainer(model=model(len(tok)), reward_funcs=[accuracy_reward], args=args,
                              train_dataset=data, processing_class=tok)
    trainer.train()
    means = [h["rewards/accuracy_reward/mean"] for h in trainer.state.log_history
             if "rewards/accuracy_reward/mean" in h]
    assert len(means) == 2
    assert all(0.0 <= m <= 1.0 for m in means)
