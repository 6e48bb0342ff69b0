"""`use_compilation_cache`: compiled networks kept under ltrlib's cache folder, a cache the
user configured left as it is, an unwritable folder a warning. Each case runs in its own
Python, since JAX's configuration is global to a process."""

import json
import os
import subprocess
import sys


PROBE = """
import json, warnings
import jax
from ltrlib.neural.ranker import use_compilation_cache
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    use_compilation_cache()
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir,
                  "min_seconds": jax.config.jax_persistent_cache_min_compile_time_secs,
                  "warnings": [str(w.message) for w in caught]}))
"""


def probe(**env) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JAX_PERSISTENT") and k != "JAX_COMPILATION_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_cache_lives_under_ltrlibs_cache_folder(tmp_path):
    got = probe(LTRLIB_CACHE_DIR=str(tmp_path))
    assert got["dir"] == str(tmp_path / "jax") and got["min_seconds"] == 0 and not got["warnings"]
    assert (tmp_path / "jax").is_dir()


def test_a_cache_the_user_configured_is_left_as_it_is(tmp_path):
    got = probe(LTRLIB_CACHE_DIR=str(tmp_path / "ours"), JAX_COMPILATION_CACHE_DIR=str(tmp_path / "theirs"))
    assert got["dir"] == str(tmp_path / "theirs") and got["min_seconds"] == 1.0
    assert not (tmp_path / "ours").exists()


def test_a_cache_folder_that_cannot_be_made_leaves_the_cache_off_with_a_warning(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    got = probe(LTRLIB_CACHE_DIR=str(not_a_folder))
    assert got["dir"] is None and any("compilation cache is off" in w for w in got["warnings"])
