"""A study's records, `ltrlib.studies.records` (issue 65, item 3): every committed
design.json and seed.json reads and writes back byte for byte, a file without a schema
version is layout 1, a damaged, incomplete or newer record is refused naming its file."""

import json

import pytest

from ltrlib import config
from ltrlib.records import RecordError
from ltrlib.study_record import SCHEMA_VERSION, SeedRecord, StudyDesign

COMMITTED = sorted(p for p in (config.PROJ_ROOT / "reports").glob("*/design.json"))
SEEDS = sorted(p for p in (config.PROJ_ROOT / "reports").glob("*/seeds/*/seed.json"))


def test_every_committed_record_reads_and_writes_back_byte_for_byte(tmp_path):
    assert COMMITTED and SEEDS, "the committed studies' records are missing"
    for path, record in [*((p, StudyDesign) for p in COMMITTED), *((p, SeedRecord) for p in SEEDS)]:
        read = record.read(path.parent)
        assert read.schema_version == 1 and "schema_version" not in read
        written = read.write(tmp_path / path.parent.name)
        assert written.read_bytes() == path.read_bytes(), path


def test_a_design_reads_as_a_mapping_and_says_what_another_changes(tmp_path):
    fields = {"study": "S", "profile": "p", "dataset": "synthetic", "scale": "tiny", "seeds": [3, 4], "rule": "r"}
    StudyDesign(fields).write(tmp_path)
    design = StudyDesign.read(tmp_path)
    assert dict(design) == fields and design.seeds == [3, 4] and design.study == "S"
    assert design.differs({**fields, "seeds": [3, 5], "schema_version": 1}) == ["seeds"]
    with pytest.raises(TypeError):
        design["seeds"] = [1]  # read-only: a design is fixed before its first seed


def test_a_damaged_incomplete_or_newer_record_is_refused_by_name(tmp_path):
    path = tmp_path / "design.json"
    path.write_text('{"study": "S", "profile": "p"')
    with pytest.raises(RecordError, match="design.json"):
        StudyDesign.read(tmp_path)
    path.write_text(json.dumps({"study": "S", "profile": "p", "dataset": "d", "scale": "tiny"}))
    with pytest.raises(RecordError, match="seeds"):
        StudyDesign.read(tmp_path)
    newer = {"study": "S", "profile": "p", "dataset": "d", "scale": "tiny", "seeds": [1],
             "schema_version": SCHEMA_VERSION + 1}
    path.write_text(json.dumps(newer))
    with pytest.raises(RecordError, match="a newer ltrlib wrote it"):
        StudyDesign.read(tmp_path)
    (tmp_path / "seed.json").write_text(json.dumps({"wall_seconds": 1.0}))
    with pytest.raises(RecordError, match="metrics"):
        SeedRecord.read(tmp_path)


def test_every_committed_neural_design_is_what_its_profile_builds_today():
    """A registered neural study (cpu-v2's before its first seed) stays bound to the budget
    its profile names: changing `NEURAL_PROFILES` after registration fails here, as the
    study itself refuses to run on a design that differs."""
    from ltrlib.studies import neural_design

    neural = [p.parent for p in COMMITTED if StudyDesign.read(p.parent).profile.startswith("neural-")]
    assert {d.name for d in neural} >= {"bilambdamart-followup-neural", "bilambdamart-followup-neural-v2"}
    for folder in neural:
        design = StudyDesign.read(folder)
        built = neural_design(design.profile.removeprefix("neural-"), design["source"], design.study, design.seeds,
                              reports_dir=folder.parent)
        assert design.differs(built) == [], folder.name
    # Each keeps the rule it was registered with: v1 read seeds that split as seed-dependent.
    from ltrlib.fidelity.bilambdamart import NEURAL_SEEDS_RULE, NEURAL_SEEDS_RULES, neural_rule_version

    versions = {d.name: neural_rule_version(StudyDesign.read(d)["rule"]) for d in neural}
    assert versions["bilambdamart-followup-neural"] == "v1" and versions["bilambdamart-followup-neural-v2"] == "v2"
    assert NEURAL_SEEDS_RULE == NEURAL_SEEDS_RULES["v2"]


def test_a_seed_record_counts_a_resumed_notebooks_earlier_attempts(tmp_path):
    from ltrlib.manifest import NotebookRecord, RunManifest
    from ltrlib.studies.loop import _seed_minutes
    from ltrlib.studies.records import _record

    run_dir = tmp_path / "s-seed3"
    run_dir.mkdir()
    RunManifest("s-seed3", notebooks={
        "00_a": NotebookRecord(status="completed", seconds=60.0),
        "01_b": NotebookRecord(status="completed", seconds=120.0, earlier_seconds=480.0),  # resumed
    }).write(run_dir)
    (run_dir / "metrics.json").write_text("{}")
    seed = SeedRecord.read(_record(run_dir, tmp_path / "s", 3, 200.0, ["00_a", "01_b"], {}))
    assert seed["notebook_seconds"] == {"00_a": 60.0, "01_b": 600.0}
    assert _seed_minutes(seed) == {"wall_minutes": 3.3, "notebook_minutes": 11.0}
