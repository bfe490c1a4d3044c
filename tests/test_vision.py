"""The Vision Transformer (paper A section 5.6): shapes, attention both ways, LNS positions, named
states and layer order, learning, exact resume, the IDX files and the Debian package, settings."""

import gzip
import hashlib
import io
import json
import math
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from cod.config import ConfigError, ModelConfig, VisionConfig, run_config
from cod.data import images as image_data
from cod.data.images import ImageBatches, decode_idx, load_images, read_idx, write_idx
from cod.train import fingerprint
from cod.train.run import main
from cod.train.trainer import ImageClassification, Trainer
from cod.model.vision import VisionTransformer

FASHION = VisionConfig(dataset="fashion_mnist")


def vit(norm="pre_ln", position="after_norm", pool="cls", **kw) -> VisionTransformer:
    cfg = ModelConfig(**{"d_model": 16, "n_layers": 3, "n_heads": 2, "causal": False, "rope": False, "norm": norm,
                         "lns_position": position, **kw})
    return VisionTransformer(cfg, VisionConfig(dataset="fashion_mnist", pool=pool)).eval()


@pytest.fixture
def images():
    return torch.randn(3, 1, 28, 28, generator=torch.Generator().manual_seed(0))


@pytest.fixture
def separable(tmp_path):
    """A folder of Fashion-MNIST-shaped IDX files: each image is its class's fixed random picture
    at half contrast plus as much noise."""
    rng = np.random.default_rng(0)
    pictures = rng.integers(0, 128, (10, 28, 28))
    for split, n in (("train", 600), ("test", 100)):
        labels = rng.integers(0, 10, n)
        pixels = pictures[labels] + rng.integers(0, 128, (n, 28, 28))
        image_file, label_file = image_data.FILES[split]
        write_idx(tmp_path / image_file, pixels)
        write_idx(tmp_path / label_file, labels)
    return tmp_path


def vit_run(images_dir, *extra: str) -> list[str]:
    """Overrides of a ViT run small enough for a test: 7x7 patches (16 + the class token)."""
    return ["vision.dataset=fashion_mnist", f"vision.images_dir={images_dir}", "vision.patch_size=7",
            "data.seq_len=17", "model.causal=false", "model.rope=false", "model.d_model=16", "model.n_layers=2",
            "model.n_heads=2", "data.batch_size=32", "train.steps=40", "train.log_every=10", "train.stats_every=20",
            "train.stats_tokens=170", "train.ckpt_every=20", "optim.lr=1e-2", *extra]


# ---------------------------------------------------------------- the model


def test_shapes_and_the_patch_order(images):
    model = vit()
    out = model(images, torch.tensor([0, 3, 9]), keep=["resid_post", "final_norm"])
    assert out.logits.shape == (3, 10) and out.loss.shape == ()
    assert out.states["resid_post.2"].shape == out.states["final_norm"].shape == (3, 50, 16)
    assert vit(pool="mean")(images, keep=["resid_post"]).states["resid_post.0"].shape == (3, 49, 16)
    with torch.no_grad():  # patch (i, j) is pixels [4i:4i+4, 4j:4j+4] flattened row by row, after the class token
        model.patch_embed.weight.copy_(torch.eye(16))
        model.patch_embed.bias.zero_()
        model.pos_embed.zero_()
        x = model.embed(images)
    torch.testing.assert_close(x[:, 1 + 2 * 7 + 5], images[:, 0, 8:12, 20:24].flatten(1))
    torch.testing.assert_close(x[:, 0], model.cls_token[0].expand(3, -1))
    with pytest.raises(ValueError, match=r"needs \(B, 1, 28, 28\)"):
        model(torch.zeros(2, 3, 28, 28))


def test_attention_is_not_causal(images):
    model = vit()
    changed = images.clone()
    changed[:, :, -4:, -4:] += 1.0  # the last patch only
    with torch.no_grad():
        a, b = model(images, keep=["resid_post"]), model(changed, keep=["resid_post"])
    assert not torch.allclose(a.states["resid_post.0"][:, 0], b.states["resid_post.0"][:, 0])  # the class token sees it
    assert not torch.allclose(a.logits, b.logits)


@pytest.mark.parametrize("norm, position", [("pre_ln", "after_norm"), ("lns", "after_norm"), ("lns", "after_branch")],
                         ids=["none", "lns_after_norm", "lns_after_branch"])
def test_lns_factor_sits_where_the_variant_says(norm, position):
    torch.manual_seed(0)
    plain, model = vit(), vit(norm, position)
    model.load_state_dict(plain.state_dict())
    x, rope = torch.randn(2, 50, 16), model.rotary(50)
    for block, reference in zip(model.blocks, plain.blocks):  # block.layer is l, 1-based
        factor = 1 / math.sqrt(block.layer) if norm == "lns" else 1.0
        after_norm = factor if position == "after_norm" else 1.0
        after_branch = factor if position == "after_branch" else 1.0
        for sub, ref, kwargs in ((block.attn, reference.attn, {"rope": rope}), (block.mlp, reference.mlp, {})):
            torch.testing.assert_close(sub.normed_input(x), ref.normed_input(x) * after_norm)
            if after_norm == 1.0:  # the same branch input: the outputs differ by the branch factor alone
                torch.testing.assert_close(sub(x, **kwargs)[1], ref(x, **kwargs)[1] * after_branch)


def test_named_states_and_layer_order(images):
    model = vit()
    with torch.no_grad():
        out = model(images, keep=["resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post", "final_norm"])
        s = out.states
        torch.testing.assert_close(s["resid_pre.0"], model.embed(images))
        for i in range(3):
            torch.testing.assert_close(s[f"resid_mid.{i}"], s[f"resid_pre.{i}"] + s[f"attn_out.{i}"])
            torch.testing.assert_close(s[f"resid_post.{i}"], s[f"resid_mid.{i}"] + s[f"mlp_out.{i}"])
        torch.testing.assert_close(out.logits, model.classifier(s["final_norm"][:, 0]))
        assert torch.equal(model(images, order=[0, 1, 2]).logits, out.logits)
        rope = model.rotary(50)
        manual = model.blocks[2](model.blocks[0](model.embed(images), rope)[0], rope)[0]
        torch.testing.assert_close(model(images, order=[0, 2], keep=["resid_post"]).states["resid_post.1"], manual)
        replaced = model(images, order=[0, nn.Identity(), 2], keep=["resid_post"]).states
        torch.testing.assert_close(replaced["resid_post.1"], s["resid_post.0"])


def test_weight_decay_spares_the_class_and_position_embeddings():
    from cod.train.trainer import param_groups

    model = vit()
    decay, no_decay = param_groups(model, 0.05, decay_all=False)
    spared = {id(p) for p in no_decay["params"]}
    assert {id(model.cls_token), id(model.pos_embed), id(model.patch_embed.bias)} <= spared
    assert id(model.patch_embed.weight) not in spared and id(model.blocks[0].attn.branch.q_proj.weight) not in spared
    assert model.num_params(embeddings=False) == sum(p.numel() for p in model.blocks.parameters()) + 16


# ---------------------------------------------------------------- training


def test_a_vit_learns_a_separable_set(separable, tmp_path):
    out = tmp_path / "run"
    main(["--out", str(out), *vit_run(separable)])
    final = json.loads((out / "final.json").read_text())
    losses = [r["loss"] for r in map(json.loads, (out / "history.jsonl").read_text().splitlines()) if "loss" in r]
    assert final["status"] == "completed" and losses[-1] < losses[0] - 1.0
    assert final["val_acc"] > 0.6 and final["test_acc"] > 0.6  # chance: 0.1
    assert final["val_ppl"] is None and final["tokens"] == 40 * 32 * 17
    rows = [r for r in map(json.loads, (out / "history.jsonl").read_text().splitlines()) if "resid_var" in r]
    assert [r["step"] for r in rows] == [0, 20, 40] and all(len(r["mlp_var"]) == 2 for r in rows)


def test_a_vision_run_is_an_image_classification_task(separable, tmp_path):
    t = Trainer(run_config(vit_run(separable)), tmp_path / "r", quiet=True)
    assert isinstance(t.task, ImageClassification) and isinstance(t.batches, ImageBatches)
    assert isinstance(t.model, VisionTransformer)
    x, _ = t.batches.batch(0)
    assert x.shape == (32, 1, 28, 28) and t.task.tokens(x) == 32 * 17  # an image is 16 patches and the class token
    assert t.task.stats_input().shape == (10, 1, 28, 28)  # train.stats_tokens=170: 10 images of 17 tokens


def test_an_interrupted_vit_run_resumes_to_the_same_result(separable, tmp_path):
    overrides = vit_run(separable, "train.steps=12", "train.ckpt_every=6")
    main(["--out", str(tmp_path / "straight"), *overrides])
    cfg = run_config(overrides)
    t = Trainer(cfg, tmp_path / "resumed", identity=fingerprint.describe(cfg))
    t.out.mkdir(parents=True)  # 6 steps by hand, a checkpoint, then a "crash"
    while t.step < 6:
        t.train_step()
    t.save_checkpoint()
    main(["--out", str(tmp_path / "resumed"), *overrides])
    a, b = (json.loads((tmp_path / name / "final.json").read_text()) for name in ("straight", "resumed"))
    for key in ("final_train_loss", "val_loss", "test_acc"):
        assert a[key] == b[key], key
    wa, wb = (torch.load(tmp_path / name / "model.pt")["model"] for name in ("straight", "resumed"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_image_batches_depend_on_seed_and_step_and_split_across_ranks(separable):
    train = load_images(VisionConfig(dataset="fashion_mnist", images_dir=str(separable)))["train"]
    assert len(train) == 550  # the last twelfth (50) validates
    whole = ImageBatches(train, 8, seed=1)
    x, y = whole.batch(68)  # crosses from epoch 0 into epoch 1 (550 = 68 * 8 + 6)
    assert torch.equal(ImageBatches(train, 8, seed=1).batch(68)[0], x)
    halves = [ImageBatches(train, 8, seed=1, rank=r, world_size=2).batch(68) for r in (0, 1)]
    assert torch.equal(torch.cat([h[0] for h in halves]), x) and torch.equal(torch.cat([h[1] for h in halves]), y)
    assert not torch.equal(ImageBatches(train, 8, seed=2).batch(68)[1], y)
    epoch = torch.cat([*(whole.batch(s)[1] for s in range(68)), y[:6]])  # every image once
    assert np.array_equal(np.sort(epoch.numpy()), np.sort(train.labels))


def test_a_vision_probe_needs_no_dataset(monkeypatch):
    real = image_data.images_dir

    def given_folder_only(vision):
        assert vision.images_dir, "the probe read the real dataset"
        return real(vision)

    monkeypatch.setattr(image_data, "images_dir", given_folder_only)
    fingerprint._probe_hash.cache_clear()
    base = {"vision.dataset": "fashion_mnist", "model.causal": False, "model.rope": False, "data.seq_len": 50,
            "model.n_layers": 2}
    none = fingerprint.behaviour(run_config(base))
    assert fingerprint.behaviour(run_config(base, {"seed": 3})) == none
    assert fingerprint.behaviour(run_config(base, {"model.norm": "lns"})) != none
    fingerprint._probe_hash.cache_clear()


# ---------------------------------------------------------------- data files


def test_idx_decoder_reads_a_hand_made_file(tmp_path):
    header = bytes([0, 0, 0x08, 3]) + (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + (2).to_bytes(4, "big")
    data = header + bytes(range(12))
    assert np.array_equal(decode_idx(data), np.arange(12).reshape(2, 3, 2))
    (tmp_path / "x.gz").write_bytes(gzip.compress(data))
    assert read_idx(tmp_path / "x.gz").shape == (2, 3, 2)
    with pytest.raises(ValueError, match="not an IDX file of unsigned bytes"):
        decode_idx(bytes([0, 0, 0x0D, 1, 0, 0, 0, 1]) + bytes(4))  # floats
    with pytest.raises(ValueError, match=r"shape \(2, 3, 2\)"):
        decode_idx(data[:-1])


def _ar(members: dict[str, bytes]) -> bytes:
    out = b"!<arch>\n"
    for name, body in members.items():
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(body):<10}`\n".encode() + body + b"\n" * (len(body) % 2)
    return out


def test_the_debian_package_is_checked_and_unpacked_in_python(tmp_path, monkeypatch):
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w:xz") as t:
        for name in (n for pair in image_data.FILES.values() for n in pair):
            info = tarfile.TarInfo(f"./usr/share/datasets/fashion-mnist/{name}")
            info.size = len(name)
            t.addfile(info, io.BytesIO(name.encode()))
    deb = _ar({"debian-binary": b"2.0\n", "control.tar.xz": b"x", "data.tar.xz": tar.getvalue()})

    def apt_get_download(command, cwd, **kwargs):  # what `apt-get download` leaves in its folder
        (Path(cwd) / f"{image_data.PACKAGE}_1_all.deb").write_bytes(deb)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(image_data.subprocess, "run", apt_get_download)
    folder = tmp_path / "cache" / "fashion"
    with pytest.raises(image_data.PackageError, match="not the pinned"):
        image_data.fetch(folder)
    assert not folder.exists()  # nothing half-written is left where a later run would look
    monkeypatch.setattr(image_data, "SHA256", hashlib.sha256(deb).hexdigest())
    image_data.fetch(folder)
    assert (folder / "t10k-labels-idx1-ubyte.gz").read_text() == "t10k-labels-idx1-ubyte.gz"
    assert (folder / ".complete").exists() and not list(folder.glob("*.deb"))
    image_data.fetch(folder)  # a run beside it that fetched too: the first result stays, no error
    assert (folder / ".complete").exists() and list(folder.parent.iterdir()) == [folder]


def test_a_package_that_cannot_be_fetched_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no apt-get
    with pytest.raises(image_data.PackageError, match=r"apt-get download dataset-fashion-mnist=0\.0~git20200523"):
        image_data.fetch(tmp_path / "cache")


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"vision.dataset": "cifar10"}, "vision.dataset='cifar10' is not allowed; allowed: none, fashion_mnist"),
        ({"vision.pool": "max"}, "vision.pool='max' is not allowed; allowed: cls, mean"),
        ({"vision.patch_size": 5, "vision.dataset": "fashion_mnist"},
         r"vision.patch_size=5 must divide .* allowed: \[1, 2, 4, 7, 14, 28\]"),
        ({"vision.dataset": "fashion_mnist", "data.seq_len": 50}, "model.causal=true is not allowed .* allowed: false"),
        ({"vision.dataset": "fashion_mnist", "model.causal": False, "data.seq_len": 50}, "model.rope=true"),
        ({"vision.dataset": "fashion_mnist", "model.causal": False, "model.rope": False},
         "data.seq_len=128 .* allowed: 50"),
        ({"vision.dataset": "fashion_mnist", "vision.pool": "mean", "model.causal": False, "model.rope": False,
          "data.seq_len": 50}, "allowed: 49"),
    ],
)
def test_bad_vision_settings_name_the_parameter(overrides, message):
    with pytest.raises(ConfigError, match=message):
        run_config(overrides)


def test_a_vit_without_images_is_refused():
    with pytest.raises(ConfigError, match="vision.dataset=none gives a ViT no images; allowed: fashion_mnist"):
        VisionTransformer(ModelConfig(causal=False, rope=False), VisionConfig())
