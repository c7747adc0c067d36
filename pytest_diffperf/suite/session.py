"""The plugin's state for one pytest process, kept on ``config.stash``: settings, files, servers, devices."""

from __future__ import annotations

import os
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from .._util.tempdirs import sweep
from ..cases import Case
from ..consistency.config import ConsistencyConfig, check_clip_model
from ..consistency.thresholds import ThresholdSet
from ..errors import DiffperfError
from ..perf.baselines import BaselineSet, load_baselines
from ..perf.limits import JudgeRules, Preset
from ..perf.lint import lint_baselines
from ..perf.scenarios import ScenarioSet, read_case_lists
from ..platforms import checks_host_anon, checks_vram, device_env_var
from ..results.model import InconclusiveMode
from ..results.provenance import CPU_LAUNCHERS
from ..serving.deviceusage import probe_for
from ..serving.interference import BusyPolicy, Watch, run_root
from ..serving.launchers import Launcher, ServerSpec, get_launcher, group_key
from ..serving.pool import ServerPool
from ..sglang.semantics import newer_than_known
from ..sharding.devices import DeviceShare, device_share, visible_devices
from ..sharding.plan import Shard, plan_shards, which_shard
from ..verdicts.priors import NoisePriors
from ..verdicts.static import StaticPolicy
from .consistency import consistency_config, thresholds
from .logdir import log_dir
from .options import Settings, ground_truth_requested, read_settings
from .progress import register as live_progress
from .validation import check_up_front
from .verdictsettings import ABRun, ab_run, noise_priors, static_policy


@dataclass
class DiffperfSession:
    """Everything one pytest process knows once its options are read, built by :meth:`from_config`.

    Owns the parsed settings, the scenarios (baselines and cases, matched), the judging rules and
    policies, this process's devices, ports and shard, the server pool and the A/B run's side
    servers (closed by :meth:`close`), and the interference watch. It judges nothing itself: the
    scenario items read it; the results and their files belong to :class:`~.report.ResultsCollector`.
    """

    settings: Settings
    scenarios: ScenarioSet  # the baselines and cases, and which scenarios run under which node id
    launcher: Launcher
    preset: Preset
    pool: ServerPool
    workdir: Path
    devices: DeviceShare  # this process's devices and ports
    rules: JudgeRules | None = None  # what every scenario is judged by; None: no profile, nothing judged
    shard: Shard | None = None  # run only this shard's scenarios
    consistency: ConsistencyConfig | None = None  # None: outputs are not compared
    thresholds: ThresholdSet | None = None
    case_source: dict[str, Any] | None = None  # where SGLang's case lists were read from, and how
    ab: ABRun | None = None  # --diffperf-base: every scenario A/B against the base build
    static_policy: StaticPolicy | None = None  # None: stored-baseline checks by SGLang's rule alone
    inconclusive: InconclusiveMode = "report"
    priors: NoisePriors | None = None  # --diffperf-noise's calibration file (None: the built-in priors)
    _sharing: Counter[str] | None = field(default=None, repr=False)  # server group -> scenarios of the suite on it
    interference: Watch = field(default_factory=lambda: Watch(os.getpid(), BusyPolicy()))  # what others take

    @classmethod
    def from_config(cls, config: pytest.Config) -> DiffperfSession:
        """Read and check every setting and file (DiffperfError on the first problem), then make the work folder."""
        settings = read_settings(config)
        if settings.diffperf_baselines is None:
            raise DiffperfError(
                "needs a baseline file: pass --diffperf-baselines PATH or set diffperf_baselines in the ini file",
                source="--diffperf",
            )
        baselines = load_baselines(settings.diffperf_baselines, settings.diffperf_hardware)
        rules = judge_rules(baselines, settings)  # an unknown profile fails now, not once per test
        case_file = read_case_lists(
            settings.diffperf_cases,
            settings.diffperf_hardware,
            settings.diffperf_suites,
            semantics=settings.diffperf_sglang_semantics,
        )
        scenarios = ScenarioSet(baselines, case_file, settings.diffperf_hardware)
        cases = scenarios.cases
        shard = which_shard(settings.diffperf_shard, settings.diffperf_shard_id, settings.diffperf_num_shards)
        devices = share_of(config, settings)
        try:
            launcher = get_launcher(settings.diffperf_server)
        except DiffperfError as exc:
            raise DiffperfError(str(exc), source="--diffperf-server") from None
        if not launcher.writes_perf_log:
            message = f"launcher {launcher.name!r} writes no perf log, which the checks need"
            raise DiffperfError(message, source="--diffperf-server")
        consistency = None
        if any(c.run_consistency_check for c in cases.values()):
            consistency = consistency_config(settings, ground_truth_requested(config))
        limits = thresholds(settings) if consistency else None
        check_up_front(settings, cases.values(), consistency, baselines.files)
        priors = noise_priors(settings)
        noise = static_policy(settings, priors)
        if consistency is not None:
            check_clip_model(consistency)  # imports open_clip and torch (seconds): once the inputs above are read
        sweep("diffperf-")  # earlier versions' and crashed runs' work folders in $TMPDIR, once old
        workdir = log_dir(config, settings)  # made by the first server start: none in a collect-only run
        progress = live_progress(config)  # shown live, also from xdist workers
        home = config.invocation_params.dir
        probe = None if launcher.name in CPU_LAUNCHERS else probe_for(settings.diffperf_hardware)
        busy = BusyPolicy(settings.diffperf_busy_share, settings.diffperf_quiet_wait, settings.diffperf_busy_device)
        interference = Watch(run_root(controller(config)), busy, probe, devices.env)
        ab = ab_run(
            settings, baselines, priors, launcher, workdir, devices, progress, home, interference
        )  # git= sides checked out
        session = cls(
            settings=settings,
            scenarios=scenarios,
            launcher=launcher,
            preset=settings.diffperf_preset,
            rules=rules,
            pool=ServerPool(
                workdir,
                settings.diffperf_startup_timeout,
                progress,
                devices.env,
                devices.ports,
                watch=controller(config),
                progress_every=settings.diffperf_progress_every,
                before_start=interference.before_start(progress),
                on_ready=interference.adopt,
            ),
            workdir=workdir,
            devices=devices,
            consistency=consistency,
            thresholds=limits,
            case_source=(case_file.model_extra or {}).get("sglang_source"),
            ab=ab,
            static_policy=noise,
            inconclusive=settings.diffperf_inconclusive,
            priors=priors,
            interference=interference,
        )
        try:
            session.shard = session.shard_of(*shard) if shard else None
        except BaseException:
            session.close()  # the git= sides' worktrees
            raise
        return session

    @property
    def baselines(self) -> BaselineSet:
        return self.scenarios.baselines

    @property
    def cases(self) -> dict[str, Case]:
        return self.scenarios.cases

    @property
    def not_expressible(self) -> dict[str, str]:
        """SGLang's cases the plugin cannot run yet: id -> why."""
        return self.scenarios.not_expressible

    def scenario_ids(self) -> list[str]:
        """The scenario set's (``perf.scenarios``): the same for ``diffperf plan``, ``merge`` and ``lint``."""
        return self.scenarios.ids

    def unmatched(self, scenario_ids: Sequence[str]) -> Unmatched:
        """Of ``scenario_ids``: scenarios without a case, cases without a scenario, cases not expressible yet."""
        return Unmatched(
            no_case=[s for s in scenario_ids if s not in self.cases and s not in self.not_expressible],
            no_scenario=[s for s in scenario_ids if s in self.cases and s not in self.baselines.scenarios],
            unjudged=[s for s in scenario_ids if s in self.cases and not fails_without_scenario(self.cases[s])],
            not_expressible={s: self.not_expressible[s] for s in scenario_ids if s in self.not_expressible},
            other_suites=self.scenarios.other_suites,
        )

    def start_share(self, scenario_id: str, ready_s: float | None) -> float:
        """The scenario's share of its server's start-up time: split over every scenario of the suite that uses the
        same server, selected or not (so ``estimated_full_test_time_s`` does not depend on ``-k``)."""
        if self._sharing is None:
            group_of = group_key(self.cases, self.launcher.name)
            self._sharing = Counter(group_of(sid) for sid in self.scenario_ids() if sid in self.cases)
        return (ready_s or 0.0) / max(1, self._sharing.get(group_key(self.cases, self.launcher.name)(scenario_id), 1))

    def spec(self, scenario_id: str) -> ServerSpec | None:
        case = self.cases.get(scenario_id)
        return ServerSpec.for_case(case, self.launcher.name) if case else None

    def shard_of(self, k: int, n: int) -> Shard:
        """Shard K of N of the session's scenarios (the plan ``diffperf plan`` prints for the same files)."""
        return plan_shards(self.scenario_ids(), self.baselines.scenarios, group_key(self.cases, self.launcher.name), n)[
            k - 1
        ]

    def header(self) -> dict[str, object]:
        return {
            "profile": self.settings.profile,
            "preset": self.preset.name,
            "hardware": self.settings.diffperf_hardware,
            "baselines": [str(p) for p in self.judged_files()],
            "cases": str(self.settings.diffperf_cases) if self.settings.diffperf_cases else None,
            "suites": ",".join(self.case_source["suites"]) if self.case_source else None,
            "sglang_release": sglang_release(self.case_source),
            "launcher": self.launcher.name,
            "inconclusive": self.inconclusive,
            "shard": f"{self.shard.number}/{self.shard.of}" if self.shard else None,
            "consistency": self.consistency.describe() if self.consistency else "off (no ground-truth folder)",
            "base": self.ab.sides["base"].spec.text if self.ab else None,
            "candidate": self.ab.sides["candidate"].spec.text if self.ab else None,
            "base_commit": self.ab.sides["base"].commit if self.ab else None,
            "candidate_commit": self.ab.sides["candidate"].commit if self.ab else None,
        }

    def judged_files(self) -> list[Path]:
        """The baseline files this platform's run judges by: the primary (its tolerances), then each file that holds
        one of its scenarios (on h100 not the NPU and MUSA fragments a folder also has)."""
        return list(dict.fromkeys([self.baselines.primary, *self.scenarios.files]))

    def header_lines(self) -> list[str]:
        """The report header: settings, the baseline files' lint warnings, where the logs go, the shard. SGLang's
        release appears once, on the case lists' line (the results file keeps it as ``sglang_release``)."""
        warnings = sum(f.severity == "warning" for f in lint_baselines(self.baselines, selected=self.scenario_ids()))
        shown = {k: v for k, v in self.header().items() if v is not None and k != "sglang_release"}
        lines = [f"diffperf: {k}={', '.join(v) if isinstance(v, list) else v}" for k, v in shown.items()]
        if warnings:
            lines.append(f"diffperf: lint: {warnings} warning(s) in the baseline files (see: {self.lint_command()})")
        if self.case_source:
            source = self.case_source
            release = self.header()["sglang_release"]
            lines.append(
                f"diffperf: SGLang's case lists {source['path']}"
                + (f" of release {release}" if release else "")
                + f" as on {source['hardware']} (loaded with {source['loaded_with']}): {len(self.cases)} case(s), "
                f"{len(self.not_expressible)} not expressible yet"
            )
            lines += [f"diffperf: warning: {warning}" for warning in source.get("warnings", [])]
            lines += [f"diffperf: note: {note}" for note in source.get("notes", [])]
        missing = self.launcher.missing_program() if self.ab is None else None  # A/B sides name their own builds
        if missing:
            lines.append(f"diffperf: warning: {missing}")
        if self.settings.diffperf_dry_run:
            lines.append("diffperf: dry run: nothing is started; each scenario's plan is printed at the end")
        if self.shard is not None:
            lines.append(
                f"diffperf: shard {self.shard.number}/{self.shard.of}: {len(self.shard.scenarios)} scenario(s), "
                f"{len(self.shard.groups)} server start(s), estimated {self.shard.estimated_s:.0f} s"
            )
        return lines

    def lint_command(self, *, prune: bool = False) -> str:
        """The ``diffperf lint`` command that lists the findings the header counts (``prune``: and removes what no
        case uses: with the case file, thresholds and ground-truth folder of this run)."""
        s = self.settings
        hardware = ["--hardware", s.diffperf_hardware] if s.diffperf_hardware else []
        extra: list[str] = []
        if prune:
            thresholds = [str(s.diffperf_thresholds)] if s.diffperf_thresholds and self.consistency else []
            consistency = self.consistency  # a data repository's GT (SGLang's lookup) is not a folder to prune
            gt_dir = consistency.gt_dir if consistency is not None and consistency.sglang is None else None
            extra = [*thresholds, f"--cases={s.diffperf_cases}", *([f"--gt-dir={gt_dir}"] if gt_dir else []), "--prune"]
        return shlex.join(["diffperf", "lint", str(s.diffperf_baselines), *extra, *hardware])

    def close(self) -> None:
        self.pool.release()
        if self.ab is not None:
            self.ab.close()


OTHER_SUITES_SHOWN = 5  # ids of other suites' scenarios named in the line (a narrowed --diffperf-suites has many)


@dataclass(frozen=True)
class Unmatched:
    """Scenarios and cases that do not meet: each kind in run order."""

    no_case: list[str]  # a baseline scenario without a case: fails, naming the case to add
    no_scenario: list[str]  # a case without a baseline scenario: fails, printing the baseline to add
    not_expressible: dict[str, str]  # an SGLang case the plugin cannot express yet: skipped, with the reason
    other_suites: dict[str, list[str]] = field(default_factory=dict)  # a scenario of an unread suite's case: not run
    unjudged: list[str] = field(default_factory=list)  # cases judged on nothing (SGLang <0.5.21, no perf check)

    def lines(self) -> list[str]:
        """The report's lines ('diffperf: ...'); none when everything meets."""
        lines = []
        if self.other_suites:
            suites = sorted({s for names in self.other_suites.values() for s in names})
            ids = list(self.other_suites)
            shown = ", ".join(ids[:OTHER_SUITES_SHOWN]) + (", ..." if len(ids) > OTHER_SUITES_SHOWN else "")
            lines.append(
                f"diffperf: {len(ids)} scenario(s) of the baseline file are SGLang's cases of other suites "
                f"({', '.join(suites)}), not run here: {shown}"
            )
        if self.no_case:
            lines.append(
                f"diffperf: {len(self.no_case)} scenario(s) without a case (they fail): {', '.join(self.no_case)}"
            )
        failing = [s for s in self.no_scenario if s not in self.unjudged]
        if failing:
            lines.append(
                f"diffperf: {len(failing)} case(s) without a baseline scenario (they fail, printing the "
                f"baseline to add; pytest --regen-baselines -k ID writes it): {', '.join(failing)}"
            )
        unjudged = [s for s in self.no_scenario if s in self.unjudged]
        if unjudged:
            lines.append(
                f"diffperf: {len(unjudged)} case(s) without a baseline scenario, not judged (run_perf_check false, "
                f"as their SGLang release leaves them): {', '.join(unjudged)}"
            )
        if self.not_expressible:
            lines.append(f"diffperf: {len(self.not_expressible)} case(s) of SGLang's the plugin cannot run (skipped):")
            lines += [f"diffperf:   {sid}: {reason}" for sid, reason in self.not_expressible.items()]
        return lines


def sglang_release(source: dict[str, Any] | None) -> str | None:
    """The header's SGLang release: the number, where it was read, and whether the plugin's rules know it."""
    if not source or "release" not in source:
        return None
    newer = newer_than_known(Version(source["release"]))
    return f"{source['release']} ({source['release_from']})" + (f"; {newer}" if newer else "")


def fails_without_scenario(case: Case) -> bool:
    """Whether a case without a baseline scenario fails: not one whose SGLang release judges nothing with
    run_perf_check false (before 0.5.21)."""
    return case.run_perf_check or case.judged_without_perf_check != "nothing"


def judge_rules(baselines: BaselineSet, settings: Settings) -> JudgeRules | None:
    """The profile's rules (None without one); memory is judged where the platform's server reports it (all of it
    when the platform is not set)."""
    if not settings.profile:
        return None
    hardware = settings.diffperf_hardware
    return JudgeRules(
        baselines.profile(settings.profile),
        settings.diffperf_preset,
        tuple(baselines.step_fractions),
        vram=checks_vram(hardware) if hardware else True,
        host_anon=checks_host_anon(hardware) if hardware else True,
    )


def controller(config: pytest.Config) -> tuple[int, ...]:
    """An xdist worker's controller (its parent), whose death must stop the worker's servers too."""
    return (os.getppid(),) if hasattr(config, "workerinput") else ()


def share_of(config: pytest.Config, settings: Settings) -> DeviceShare:
    """This process's devices and ports: an xdist worker's slice, else all of them."""
    var = device_env_var(settings.diffperf_hardware)
    devices = visible_devices(settings.diffperf_devices, var)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return device_share(devices, var, getattr(config.option, "numprocesses", None) or 0, None)
    return device_share(devices, var, workerinput["workercount"], workerinput["workerid"])
