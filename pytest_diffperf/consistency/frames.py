"""Which frames of an output are compared: the ``--diffperf-frames`` spec and its GT labels.

Spec grammar: ``all``, ``every:K`` (frames 0, K, 2K, ...), or a comma list of ``first``, ``mid``
(``total // 2``), ``last`` and frame indices. Each picked frame has a label that names its GT file
(``<case>_<n>gpu_frame_<label>.png``): ``first`` -> ``0``, ``mid`` -> ``mid``, ``last`` -> ``last``
(SGLang's names), an index ``i`` -> ``i``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DiffperfError

DEFAULT_FRAMES = "first,mid,last"
_NAMED = {"first": "0", "mid": "mid", "last": "last"}


@dataclass(frozen=True)
class FrameSpec:
    """A parsed frame spec: ``every`` (a step, 1 for ``all``) or a list of named/numbered picks."""

    text: str
    every: int | None = None
    picks: tuple[str | int, ...] = ()

    def select(self, n_total: int) -> list[tuple[int, str]]:
        """``(frame index, GT label)`` pairs for a video of ``n_total`` frames, in spec order."""
        if n_total < 1:
            raise DiffperfError("the video has no frames to compare", source="--diffperf-frames")
        if self.every is not None:
            return [(i, str(i)) for i in range(0, n_total, self.every)]
        named = {"first": 0, "mid": n_total // 2, "last": n_total - 1}
        out: list[tuple[int, str]] = []
        for pick in self.picks:
            if isinstance(pick, str):
                out.append((named[pick], _NAMED[pick]))
            elif pick >= n_total:
                raise DiffperfError(
                    f"frame {pick} asked for, but the video has only {n_total} frames (0..{n_total - 1})",
                    source="--diffperf-frames",
                )
            else:
                out.append((pick, str(pick)))
        return out


def parse_frames_spec(text: str) -> FrameSpec:
    """Parse a frame spec; DiffperfError that quotes the bad part and the grammar."""
    spec = text.strip().lower()
    grammar = "expected 'all', 'every:K' (K >= 1), or a comma list of first, mid, last and frame indices"
    if spec == "all":
        return FrameSpec(text, every=1)
    if spec.startswith("every:"):
        step = spec.removeprefix("every:").strip()
        if not (step.isascii() and step.isdigit()) or int(step) < 1:
            raise DiffperfError(f"bad step {step!r} in {text!r}; {grammar}", source="--diffperf-frames")
        return FrameSpec(text, every=int(step))
    picks: list[str | int] = []
    labels: set[str] = set()
    for part in (p.strip() for p in spec.split(",")):
        if part in _NAMED:
            pick: str | int = part
            label = _NAMED[part]
        elif part.isascii() and part.isdigit():
            pick = int(part)
            label = str(pick)
        else:
            raise DiffperfError(f"bad frame {part!r} in {text!r}; {grammar}", source="--diffperf-frames")
        if label in labels:
            raise DiffperfError(f"frame {part!r} is listed twice in {text!r}", source="--diffperf-frames")
        labels.add(label)
        picks.append(pick)
    return FrameSpec(text, picks=tuple(picks))


def select_frames(n_total: int, spec: str | FrameSpec) -> list[int]:
    """Indices of the frames compared for a video of ``n_total`` frames."""
    parsed = spec if isinstance(spec, FrameSpec) else parse_frames_spec(spec)
    return [index for index, _ in parsed.select(n_total)]
