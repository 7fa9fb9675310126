"""The journal's record schema: frozen dataclasses, one JSON object a line, versioned."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from ..errors import JournalError, NewerSchemaError, UserError
from ..statuses import EXIT_CODES, FAILED_STATUSES, STATUSES, Status
from .agent_run import AgentRun, agent_checks
from .checks_run import ChecksRun
from .confirmed import ConfirmedHoldout, ConfirmedMetric
from .decision import Decision
from .evidence import AACheck, Evidence, SentinelEvidence, field_names, fields_in
from .field_types import (
    OBJECT,
    OBJECT_MAP,
    OBJECTS,
    OPTIONAL_NUMBER,
    OPTIONAL_OBJECT,
    OPTIONAL_TEXT,
    checker,
    field_checks,
    optional_number,
    problem,
)
from .phase import Phase, phase_checks, phases_from_dict
from .placement import Confinement, HostFacts

__all__ = [
    "EXIT_CODES",
    "FAILED_STATUSES",
    "SCHEMA_VERSION",
    "STATUSES",
    "Asi",
    "CalibrationRecord",
    "ConfirmationRecord",
    "ExperimentRecord",
    "ImportRecord",
    "SessionRecord",
    "Status",
    "record_from_dict",
]

SCHEMA_VERSION = 1


class _Record:
    kind: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Any]]  # each kind is a dataclass
    session: str  # a field of each kind: every record is of one session

    def to_dict(self) -> dict[str, Any]:
        return self.base_dict()

    def base_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "type": self.kind, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        kwargs = fields_in(cls, data)
        if "asi" in kwargs and isinstance(kwargs["asi"], dict):
            kwargs["asi"] = Asi.from_dict(kwargs["asi"])
        return cls(**kwargs)

    @classmethod
    def check_nested(cls, data: dict[str, Any], where: str) -> None:
        """The nested parts of a line that are read back (evidence, the recorded config) of
        the shape the review expects, before they are read into values: a line of valid JSON
        with `"decision": 5` is a damaged line, not a traceback in every command."""
        for name, value, hint in cls._nested(data):
            if not checker(hint)(value):
                raise JournalError(f"{where}: {cls.kind} field '{name}' {problem(value, hint)}")

    def check(self, where: str) -> None:
        """Every field of the type its annotation says."""
        for name, ok, hint in field_checks(type(self)):
            value = getattr(self, name)
            if not ok(value):
                raise JournalError(f"{where}: {self.kind} field '{name}' {problem(value, hint)}")

    @classmethod
    def _nested(cls, data: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        return []


@dataclass(frozen=True)
class Asi:
    """Actionable side information: why it was tried, what happened, what to try next."""

    hypothesis: str | None = None
    mechanism: str | None = None
    expected_effect: str | None = None
    result: str | None = None
    rollback_reason: str | None = None
    next_action_hint: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Asi:
        return cls(**fields_in(cls, data))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SessionRecord(_Record):
    """Written each time `run` starts or resumes a session."""

    kind: ClassVar[str] = "session"
    session: str
    event: str  # "start" or "resume"
    at: str
    branch: str
    base_commit: str
    tip_commit: str
    config: dict[str, Any]
    environment: dict[str, Any]

    def check(self, where: str) -> None:
        super().check(where)
        from ..config import Config  # the config module imports nothing from here

        try:
            Config.from_dict(self.config)
        except UserError as exc:
            raise JournalError(f"{where}: session field 'config' is not a config: {exc}") from None


@dataclass(frozen=True)
class CalibrationRecord(_Record):
    """Repeated runs of the current best: the baseline samples and the noise they show."""

    kind: ClassVar[str] = "calibration"
    session: str
    at: str
    commit: str
    samples: dict[str, list[float]]
    medians: dict[str, float | None]
    noise_pct: dict[str, float | None]
    threshold_pct: float | None
    bench_logs: list[str]
    duration_s: float
    aa: AACheck | None = None
    detectable_effect_pct: float | None = None
    runs_needed_for_target: int | None = None
    warnings: list[str] = field(default_factory=list)
    host: str | None = None  # the bench host it measured, on a cluster (cluster/)
    # The kind of machine that host is (CPU model and count, OS): hosts of a kind share it.
    host_kind: str | None = None
    sentinel_run_s: float | None = None  # one run of bench.sentinel_command, when set
    # The toolchains on the bench's PATH and their versions (bench/fingerprint.py): what measured.
    toolchains: dict[str, str] = field(default_factory=dict)
    # `[metric] fallback`, when this calibration found the primary too noisy for the night and
    # the fallback not (decide/calibration.fallback_switch): the session decides on it from
    # here on, and the noise, threshold and A/A check above are the fallback's.
    decides_on: str | None = None
    # On a cluster: the bench hosts that died while they measured it (placement.LostHost's
    # fields), before the one that did (`host`).
    lost: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        found = dataclasses.replace(self, aa=None).base_dict()
        found["aa"] = None if self.aa is None else self.aa.to_dict()
        if self.decides_on is None:  # a calibration on the primary, as lines before it read
            del found["decides_on"]
        if not self.lost:  # as lines before it read
            del found["lost"]
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CalibrationRecord:
        aa = data.get("aa")
        record: CalibrationRecord = super().from_dict(
            {**data, "aa": AACheck.from_dict(aa)} if isinstance(aa, dict) else data
        )
        return record

    @classmethod
    def _nested(cls, data: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        aa = data.get("aa")
        found: list[tuple[str, Any, Any]] = [("aa", aa, OPTIONAL_OBJECT)]
        if isinstance(aa, dict):
            found += [
                ("aa.ok", aa.get("ok"), bool),
                ("aa.p_value", aa.get("p_value"), float),
                ("aa.can_fail", aa.get("can_fail", True), bool),
                ("aa.n_per_arm", aa.get("n_per_arm"), int | None),
            ]
            found += [
                (f"aa.{name}", aa.get(name), OPTIONAL_NUMBER)
                for name in ("shift_pct", "ci_low_pct", "ci_high_pct", "smallest_p")
            ]
        return found


@dataclass(frozen=True)
class ExperimentRecord(_Record):
    """One hypothesis tried: what, how it was measured, what was decided and why."""

    kind: ClassVar[str] = "experiment"
    session: str
    id: str
    n: int
    status: Status
    title: str
    proposer: str
    source: str | None
    patch_sha256: str
    touched_files: list[str]
    parent_commit: str
    kept_commit: str | None
    started_at: str
    ended_at: str
    duration_s: float
    phases: dict[str, Phase] = field(default_factory=dict)
    # What the rule decided and read (its `sentinels` too, written beside it as the record's
    # `sentinels`); None when nothing was measured.
    decision: Decision | None = None
    checks: ChecksRun | None = None  # None when they did not run
    bench_logs: list[str] = field(default_factory=list)
    bench_durations_s: list[float] = field(default_factory=list)
    bench_tail: str | None = None
    error: str | None = None
    asi: Asi = field(default_factory=Asi)
    retry_of: str | None = None  # the id of the earlier attempt this one runs again
    proposal: dict[str, Any] | None = None  # what the proposer noted (a knob, its value)
    family: str | None = None  # the axis the hypothesis explores, as its proposer named it
    agent: AgentRun | None = None  # a coding agent's run: preset, usage (cost), logs
    # On a cluster: the host and worker that measured it, and measurements against a best that
    # moved before the keep (each measured again on the new best).
    cluster: HostFacts | None = None
    # How the candidate's build, bench and checks were confined (bench/sandbox.py): the tool,
    # what they could write, network; the tool "none" and why when they ran unconfined.
    confinement: Confinement | None = None

    @property
    def rule(self) -> str | None:
        """The part of the decision rule that decided; None when nothing was measured."""
        return None if self.decision is None else str(self.decision.rule)

    @property
    def reason(self) -> str | None:
        """Why it ended as it did: the decision's reason, else the error."""
        return (self.decision.reason if self.decision is not None else None) or self.error

    @property
    def sentinels(self) -> dict[str, SentinelEvidence]:
        """Each sentinel's evidence and verdict; empty when nothing was measured."""
        return {} if self.decision is None else self.decision.sentinels

    def evidence(self, metric: str | None = None) -> Evidence:
        """A metric's evidence; by default the primary's (the one the rule's floor applies to).
        Empty when nothing was measured."""
        if self.decision is None:
            return Evidence()
        if metric is not None:
            return self.decision.metrics.get(metric, Evidence())
        return self.decision.evidence

    def to_dict(self) -> dict[str, Any]:
        values = {name: getattr(self, name) for name in _VALUES}
        blank: dict[str, Any] = dict.fromkeys(_VALUES)
        plain = dataclasses.replace(self, **blank)
        found: dict[str, Any] = {}
        for key, value in plain.base_dict().items():
            typed = values.get(key)
            found[key] = value if typed is None else _written(typed)
            if key == "decision":  # the journal's order: the decision, then its sentinels
                found["sentinels"] = {} if typed is None else typed.sentinels_dict()
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExperimentRecord:
        if data.get("status") in STATUSES:  # else its own check names it
            data = {**data, "status": Status(data["status"])}
        typed = {
            name: read(data) for name, read in _VALUES.items() if isinstance(data.get(name), dict)
        }
        record: ExperimentRecord = super().from_dict({**data, **typed})
        return record

    @classmethod
    def _nested(cls, data: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        asi = data.get("asi")
        found: list[tuple[str, Any, Any]] = [
            (f"asi.{name}", asi.get(name), OPTIONAL_TEXT)
            for name in field_names(Asi)
            if isinstance(asi, dict)
        ]
        found += phase_checks(data.get("phases"))
        decision = data.get("decision")
        sentinels = data.get("sentinels")
        found.append(("decision", decision, OPTIONAL_OBJECT))
        found += [
            (name, data.get(name), OPTIONAL_OBJECT) for name in ("cluster", "confinement", "agent")
        ]
        found += agent_checks(data.get("agent"))
        cluster = data.get("cluster")
        if isinstance(cluster, dict):
            found.append(("cluster.stale", cluster.get("stale"), OBJECTS))
        checks = data.get("checks")
        found.append(("checks", checks, OPTIONAL_OBJECT))
        if isinstance(checks, dict):
            found += [
                ("checks.exit_code", checks.get("exit_code"), int | None),
                ("checks.duration_s", checks.get("duration_s"), OPTIONAL_NUMBER),
                ("checks.tests", checks.get("tests"), dict[str, int] | None),
            ]
        found.append(("sentinels", sentinels, OBJECT_MAP | None))
        if not isinstance(decision, dict):
            return found
        found += [
            ("decision.status", decision.get("status"), OPTIONAL_TEXT),
            ("decision.rule", decision.get("rule"), OPTIONAL_TEXT),
            ("decision.reason", decision.get("reason"), OPTIONAL_TEXT),
            ("decision.look", decision.get("look"), int | None),
            ("decision.primary", decision.get("primary"), OPTIONAL_TEXT),
            ("decision.metrics", decision.get("metrics"), OBJECT_MAP | None),
            ("decision.holdout", decision.get("holdout"), OPTIONAL_OBJECT),
            ("decision.sentinel_extension", decision.get("sentinel_extension"), OPTIONAL_OBJECT),
        ]
        evidence = {**(decision.get("metrics") or {}), **(sentinels or {})}
        for name, ev in evidence.items():
            if not isinstance(ev, dict):
                continue  # named above, as the metrics' or the sentinels' own
            # Only the numbers that fail go on to be reported: a record carries dozens.
            found += [
                (f"evidence {name}.{k}", ev.get(k), OPTIONAL_NUMBER)
                for k in _EVIDENCE_NUMBERS
                if not optional_number(ev.get(k))
            ]
        return found


@dataclass(frozen=True)
class ConfirmationRecord(_Record):
    """The session's base commit against its tip: the cumulative change, measured directly."""

    kind: ClassVar[str] = "confirmation"
    session: str
    at: str
    base_commit: str
    tip_commit: str
    runs_per_arm: int
    metric: str
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    metrics: dict[str, ConfirmedMetric]  # every metric the bench printed
    bench_logs: list[str]
    host: str | None = None  # the bench host it measured, on a cluster (cluster/)
    # A branch `finalize` cut, measured on its own: not the session's headline.
    branch: str | None = None
    # The kept commits this measurement takes out of the tip (`base_commit` is the tip without
    # them): what they contribute to the final combination. Not the session's headline.
    left_out: list[str] | None = None
    # The hidden holdout's base against tip, when the config has one: its comparison.
    holdout: ConfirmedHoldout | None = None

    @property
    def is_headline(self) -> bool:
        """The session's base against its tip (not a branch's, not a contribution's)."""
        return is_headline(vars(self))

    def to_dict(self) -> dict[str, Any]:
        found = dataclasses.replace(self, metrics={}, holdout=None).base_dict()
        found["metrics"] = {name: m.to_dict() for name, m in self.metrics.items()}
        found["holdout"] = None if self.holdout is None else self.holdout.to_dict()
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationRecord:
        metrics, held = data.get("metrics"), data.get("holdout")
        typed: dict[str, Any] = {}
        if isinstance(metrics, dict):
            typed["metrics"] = {k: ConfirmedMetric.from_dict(v) for k, v in metrics.items()}
        if isinstance(held, dict):
            typed["holdout"] = ConfirmedHoldout.from_dict(held)
        record: ConfirmationRecord = super().from_dict({**data, **typed})
        return record

    @classmethod
    def _nested(cls, data: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        metrics = data.get("metrics")
        found: list[tuple[str, Any, Any]] = [("metrics", metrics, OBJECT_MAP)]
        found.append(("holdout", data.get("holdout"), OPTIONAL_OBJECT))
        if isinstance(metrics, dict):
            found += [(f"metrics.{k}", v, OBJECT) for k, v in metrics.items()]
        return found


def is_headline(confirmation: dict[str, Any]) -> bool:
    """A confirmation (as a dict) of the session's base against its tip: the one behind the
    headline, not a branch's nor a kept change's contribution."""
    return not confirmation.get("branch") and not confirmation.get("left_out")


@dataclass(frozen=True)
class ImportRecord(_Record):
    """Another tool's session brought in as history (`init --from-pi`): its log's objects as
    they were, so the review reads them with the same code that reads the log itself. Its
    figures were measured elsewhere and earlier: history, never this session's baseline."""

    kind: ClassVar[str] = "import"
    session: str
    at: str
    format: str  # "pi-autoresearch"
    source: str  # the log's path, relative to the config
    source_sha256: str  # of the log's bytes: the same log is not imported twice
    lines: list[dict[str, Any]]  # the log's JSON objects, in order
    warnings: list[str] = field(default_factory=list)  # lines of the log that were skipped


_KINDS = {
    cls.kind: cls
    for cls in (
        SessionRecord,
        CalibrationRecord,
        ExperimentRecord,
        ConfirmationRecord,
        ImportRecord,
    )
}
Record = SessionRecord | CalibrationRecord | ExperimentRecord | ConfirmationRecord | ImportRecord
# Older schema versions are lifted one named step at a time: {from_version: step}.
_UPGRADES: dict[int, Any] = {}


def record_from_dict(data: dict[str, Any], where: str = "journal") -> Record:
    """A typed record from a journal line, upgrading older schema versions."""
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise JournalError(f"{where}: line has no integer schema_version")
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"{where}: schema_version {version} is newer than this autoresearch understands "
            f"({SCHEMA_VERSION}); upgrade autoresearch to read it"
        )
    while version < SCHEMA_VERSION:
        step = _UPGRADES.get(version)
        if step is None:
            raise JournalError(f"{where}: no upgrade from schema_version {version}")
        data = step(data)
        version = data["schema_version"]
    cls = _KINDS.get(str(data.get("type")))
    if cls is None:
        raise JournalError(f"{where}: unknown record type {data.get('type')!r}")
    cls.check_nested(data, where)
    try:
        record = cls.from_dict(data)
    except TypeError as exc:
        raise JournalError(f"{where}: {data.get('type')} record is incomplete: {exc}") from None
    record.check(where)
    return record


def _written(value: Any) -> Any:
    """A value field as the line holds it: its codec's dict, or a map of such (`phases`)."""
    if isinstance(value, dict):
        return {name: item.to_dict() for name, item in value.items()}
    return value.to_dict()


def _decision(data: dict[str, Any]) -> Decision:
    sentinels = data.get("sentinels")
    return Decision.from_dict(data["decision"], sentinels if isinstance(sentinels, dict) else {})


# The record's fields held as values, each read from its line by its codec (and written back by
# its `to_dict`): the decision with the line's `sentinels`.
_VALUES: dict[str, Any] = {
    "decision": _decision,
    "checks": lambda data: ChecksRun.from_dict(data["checks"]),
    "cluster": lambda data: HostFacts.from_dict(data["cluster"]),
    "confinement": lambda data: Confinement.from_dict(data["confinement"]),
    "agent": lambda data: AgentRun.from_dict(data["agent"]),
    "phases": lambda data: phases_from_dict(data["phases"]),
}

# The numbers of a metric's evidence that the review and the decision read back.
_EVIDENCE_NUMBERS = (
    "baseline_median",
    "candidate_median",
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_better",
    "p_worse",
    "improvement_pct",
)
