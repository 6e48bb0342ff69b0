"""A fast, strict parser and writer for SVMlight / LETOR ranking files.

The text format, one document per line::

    <label> [qid:<Q>] <index>:<value> <index>:<value> ... [# comment]

as shipped by Istella-S, MSLR-WEB10K/30K, Yahoo LTRC and MQ2007/2008 (with ``qid:``), and by
LightGBM's examples (without ``qid:``; query groups come from a separate ``.query`` file).

Conventions
-----------
* Features are sparse: an index that a line does not mention is 0.
* Indices are one-based (LETOR) or zero-based. ``zero_based="auto"`` does what scikit-learn's
  ``load_svmlight_file`` does: the file is zero-based if any index 0 appears in it.
* Column ``c`` of ``X`` holds file index ``c + base`` (``base`` is 0 or 1); the readers name it
  ``f{c + base}``, so feature names match the indices a user sees in the file.
* Indices on a line must be strictly increasing (as scikit-learn requires): a repeated index
  would make the dense value ambiguous.
* Labels are integers (``2`` or ``2.0``); blank lines and lines holding only a ``# comment``
  are skipped; a line ends at LF, CRLF or a lone CR (classic Mac files), and a UTF-8
  byte-order mark is accepted. Line numbers in error messages are 1-based physical line
  numbers, counting blank and comment lines.
* Values: decimal numbers with optional sign, fraction and exponent (``-1.5``, ``.25``,
  ``1e-05``). ``nan`` and ``inf`` are refused, and so are values that overflow float32.

Modules, one concern each
-------------------------
* `~ltrlib.data.svmlight.kernels` - the numba kernels (parse, line splitting, formatting) and
  the constants they read; how values are converted exactly is explained there.
* `~ltrlib.data.svmlight.parse` - reading: a file mapped and split into lines (`open_source`),
  parsed into arrays (`run_parse`), its layout settled and checked (`resolve_layout`,
  `check_width`, `finish_parse`), LightGBM's ``.query`` files (`read_group_file`).
* `~ltrlib.data.svmlight.write` - `write_svmlight`, `write_lightgbm`.
* `~ltrlib.data.svmlight.fingerprint` - the sampled content fingerprint the cache key uses.

The names below are re-exported here, so ``from ltrlib.data.svmlight import run_parse`` keeps
working; `ltrlib.data.readers` builds `Dataset`s and caches them on top of them.
"""

from ltrlib.data.svmlight.fingerprint import fingerprint_blocks, fingerprint_bytes, fingerprint_file
from ltrlib.data.svmlight.parse import (
    MAX_FEATURES,
    LetorFormatError,
    Parsed,
    RawParse,
    Source,
    check_n_features,
    check_plain_text,
    check_width,
    check_zero_based,
    finish_parse,
    open_source,
    read_group_file,
    resolve_layout,
    run_parse,
    sample_index_range,
)
from ltrlib.data.svmlight.write import write_lightgbm, write_svmlight

# Each module lists its public names once; the package hands all of them on.
__all__ = [*parse.__all__, *write.__all__, *fingerprint.__all__]
