"""Configuration (design §3): defaults, validation errors naming key and file, unknown keys kept for doctor."""

from __future__ import annotations

import pytest

from majordomus import config
from majordomus.errors import ENVIRONMENT


def test_defaults_without_a_file(tmp_path):
    cfg = config.load(str(tmp_path))
    assert cfg.get("checkpoint", "max_body_lines") == 40
    assert cfg.get("handoff", "required_sections") == ["State", "Decisions", "Open items", "Next actions"]
    assert cfg.profile == "default" and cfg.unknown_keys == []


def test_partial_file_keeps_other_defaults_and_lists_unknown_keys(tmp_path):
    (tmp_path / ".ai").mkdir()
    (tmp_path / ".ai" / "config.yaml").write_text(
        "checkpoint:\n  max_body_lines: 5\n  colour: red\nextras: 1\nprofile: reviewer\n")
    cfg = config.load(str(tmp_path))
    assert cfg.get("checkpoint", "max_body_lines") == 5
    assert cfg.get("checkpoint", "max_body_bytes") == 16384
    assert cfg.profile == "reviewer"
    assert sorted(cfg.unknown_keys) == ["checkpoint.colour", "extras"]


@pytest.mark.parametrize("text,words", [
    ("checkpoint:\n  max_body_lines: -1\n", "`checkpoint.max_body_lines` must be at least 1"),
    ("checkpoint:\n  stale_after_minutes: -1\n", "`checkpoint.stale_after_minutes` must be at least 1"),
    ("continuity:\n  render_max_bytes: 255\n", "`continuity.render_max_bytes` must be at least 256, not 255"),
    ("checkpoint:\n  max_body_bytes: 2147483649\n", "`checkpoint.max_body_bytes` must be at most 2147483648"),
    ("checkpoint:\n  max_body_lines: true\n", "`checkpoint.max_body_lines` must be a whole number"),
    ("handoff:\n  required_sections: State\n", "`handoff.required_sections` must be a list"),
    ("hooks: 3\n", "`hooks` must be a mapping"),
    ("profile: ''\n", "`profile` must be a profile name"),
    ("profile: 'a/b'\n", "`profile` must be a profile name"),
    ("- a\n- b\n", "must be a mapping of sections"),
])
def test_wrong_types_are_clear_errors(tmp_path, text, words):
    (tmp_path / ".ai").mkdir()
    path = tmp_path / ".ai" / "config.yaml"
    path.write_text(text)
    with pytest.raises(config.ConfigError) as info:
        config.load(str(tmp_path))
    assert words in info.value.message and str(path) in info.value.message
    assert info.value.code == ENVIRONMENT


def test_template_matches_the_documented_defaults():
    from importlib import resources

    import yaml

    text = resources.files("majordomus").joinpath("templates", "ai", "config.yaml").read_text()
    assert yaml.load(text, Loader=yaml.CSafeLoader) == config.DEFAULTS


def test_cached_configuration_follows_edits_and_spares_the_yaml_import(repo):
    from helpers import import_probe, run_here, state_dir

    (repo / ".ai").mkdir()
    cfg = repo / ".ai" / "config.yaml"
    cfg.write_text("checkpoint:\n  max_body_lines: 3\n")
    assert run_here("task", "start", "t1", cwd=repo).returncode == 0
    assert run_here("checkpoint", cwd=repo, input="a\nb\nc\n").returncode == 0
    assert (state_dir(repo) / "cache" / "config.json").is_file()
    assert import_probe(repo, "checkpoint", input=b"x\ny\n") == {"code": 0, "heavy": []}
    assert import_probe(repo, "checkpoint", input=b"1\n2\n3\n4\n")["code"] == 10
    cfg.write_text("checkpoint:\n  max_body_lines: 4\n")  # same size, new content: the cache must not answer
    assert import_probe(repo, "checkpoint", input=b"1\n2\n3\n4\n") == {"code": 0, "heavy": ["yaml"]}
    cfg.write_text("checkpoint:\n  max_body_lines: -1\n")
    bad = run_here("checkpoint", cwd=repo, input="z\n")
    assert bad.returncode == 12 and b"checkpoint.max_body_lines" in bad.stderr
