"""``rolleval run``'s flag-to-config merge (rolleval._runner._config.config_from_flags)."""

from __future__ import annotations

import pytest

from rolleval._runner._config import config_from_flags
from rolleval.errors import UsageError


def test_flags_override_the_file_key_by_key(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "model: m\ntasks: [gsm8k]\nn_rollouts: 4\nsampling: {temperature: 0.7, top_p: 0.9}\n"
        "server_options: {ctx: 512}\n"
    )
    config = config_from_flags(
        str(cfg),
        {
            "n_rollouts": 8,
            "temperature": 0.0,
            "stop": ("\n\n",),
            "server_options": ("rope_freq_scale=0.8",),
            "endpoints": ("http://a/v1", "http://b/v1"),
            "seed": None,  # not given: the file's (default) value stays
            "ks": (),
        },
    )
    assert config.n_rollouts == 8 and config.seed == 0 and config.model == "m"
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
        (
            {"model": "m", "tasks": ("x",), "n_rollouts": 0},
            "flags: n_rollouts: Input should be greater",
        ),
    ],
)
def test_missing_or_bad_flags_are_usage_errors(flags, message):
    with pytest.raises(UsageError, match=message):
        config_from_flags(None, flags)


def test_the_old_name_n_in_a_file_is_read_as_n_rollouts_and_flags_still_win(tmp_path):
    from rolleval._runner._config import OldSettingWarning, load_config_file

    cfg = tmp_path / "run.yaml"
    cfg.write_text("model: m\ntasks: [gsm8k]\nn: 4\nks: [1, 4]\n")
    with pytest.warns(OldSettingWarning, match=rf"{cfg}: 'n' is the old name of 'n_rollouts'"):
        assert load_config_file(cfg)["n_rollouts"] == 4
    with pytest.warns(OldSettingWarning):
        assert config_from_flags(str(cfg), {}).n_rollouts == 4
    with pytest.warns(OldSettingWarning):  # -n on the command line overrides the file's n
        assert config_from_flags(str(cfg), {"n_rollouts": 8}).n_rollouts == 8


def test_both_names_in_a_file_are_refused_naming_it(tmp_path):
    from rolleval._runner._config import load_config_file
    from rolleval.errors import DataError

    cfg = tmp_path / "run.yaml"
    cfg.write_text("model: m\ntasks: [gsm8k]\nn: 4\nn_rollouts: 4\n")
    with pytest.raises(DataError, match=rf"^{cfg}: both 'n' and 'n_rollouts' are set"):
        load_config_file(cfg)


def test_k_above_the_rollout_count_names_n_rollouts():
    with pytest.raises(
        UsageError, match=r"^flags: ks: k=16 is greater than n_rollouts=8 .*raise n_rollouts$"
    ):
        config_from_flags(None, {"model": "m", "tasks": ("x",), "n_rollouts": 8, "ks": (1, 16)})
