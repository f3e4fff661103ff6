"""``rolleval run``'s flag-to-config merge (rolleval.config.config_from_flags)."""

from __future__ import annotations

import pytest

from rolleval.config import config_from_flags
from rolleval.errors import UsageError


def test_flags_override_the_file_key_by_key(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "model: m\ntasks: [gsm8k]\nn: 4\nsampling: {temperature: 0.7, top_p: 0.9}\n"
        "server_options: {ctx: 512}\n"
    )
    config = config_from_flags(
        str(cfg),
        {
            "n": 8,
            "temperature": 0.0,
            "stop": ("\n\n",),
            "server_options": ("rope_freq_scale=0.8",),
            "endpoints": ("http://a/v1", "http://b/v1"),
            "seed": None,  # not given: the file's (default) value stays
            "ks": (),
        },
    )
    assert config.n == 8 and config.seed == 0 and config.model == "m"
    assert config.sampling.temperature == 0.0 and config.sampling.top_p == 0.9
    assert config.sampling.stop == ["\n\n"]
    assert config.server_options == {"ctx": 512, "rope_freq_scale": 0.8}
    assert config.endpoints == ["http://a/v1", "http://b/v1"] and config.ks is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"tasks": ("gsm8k",)}, "no model: pass --model"),
        ({"model": "m"}, "no task: pass --task"),
        ({"model": "m", "tasks": ("x",), "server_options": ("novalue",)}, "takes KEY=VALUE"),
        ({"model": "m", "tasks": ("x",), "n": 0}, "flags: n: Input should be greater"),
    ],
)
def test_missing_or_bad_flags_are_usage_errors(flags, message):
    with pytest.raises(UsageError, match=message):
        config_from_flags(None, flags)
