"""Files of a remote ground-truth tree over HTTP, with retries: SGLang's CI sees transient 404, 429 and 5xx
from raw.githubusercontent.com (a freshly pinned commit can 404 on the CDN for a moment).

A 429, 403, 5xx, a connection error or a body shorter than its Content-Length is retried with exponential
backoff (``Retry-After`` honoured up to the cap); a 404 is retried too, fewer times (most 404s are the
lookup's fallbacks, absent for good). What still fails is one DiffperfError naming the URL and the case.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests

from ..errors import DiffperfError

TRANSIENT = frozenset({403, 408, 425, 429})
TIMEOUT_S = 60.0
DEFAULT_BACKOFF_S = 0.5


@dataclass(frozen=True)
class Fetcher:
    """GETs below ``base_url`` (no trailing slash)."""

    base_url: str
    attempts: int = 5
    not_found_attempts: int = 2
    backoff_s: float = DEFAULT_BACKOFF_S
    cap_s: float = 8.0

    def url(self, rel: str) -> str:
        return f"{self.base_url}/{rel}"

    def get(self, rel: str, case_id: str) -> bytes | None:
        """The file's bytes; None when it is absent (404 on every try); DiffperfError when it cannot be fetched."""
        url = self.url(rel)
        why = ""
        not_found = 0
        for attempt in range(self.attempts):
            wait = self.backoff_s * 2**attempt
            try:
                resp = requests.get(url, timeout=TIMEOUT_S)
            except requests.RequestException as exc:  # refused, reset, a truncated body (urllib3 checks the length)
                why = f"{type(exc).__name__}: {exc}"
            else:
                with resp:
                    if resp.status_code == 200:
                        expected = resp.headers.get("Content-Length")
                        if expected is None or not expected.isdigit() or int(expected) == len(resp.content):
                            return resp.content
                        why = f"truncated body ({len(resp.content)} of {expected} bytes)"
                    elif resp.status_code == 404:
                        not_found += 1
                        if not_found >= self.not_found_attempts:
                            return None
                        why = "HTTP 404"
                    elif resp.status_code in TRANSIENT or resp.status_code >= 500:
                        why = f"HTTP {resp.status_code}"
                        wait = _retry_after(resp, wait)
                    else:
                        raise DiffperfError(
                            f"ground truth of case {case_id}: HTTP {resp.status_code} {resp.reason}", source=url
                        )
            if attempt < self.attempts - 1:
                time.sleep(min(wait, self.cap_s))
        raise DiffperfError(
            f"ground truth of case {case_id} could not be fetched after {self.attempts} tries (last: {why}); "
            "the cache has no copy of it: run again once the server answers",
            source=url,
        )


def _retry_after(resp: requests.Response, default: float) -> float:
    value = resp.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else default
