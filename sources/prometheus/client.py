"""HTTP to a Prometheus-compatible API: prometheus-api-client's connection, our retries, raw bytes.

:class:`PrometheusClient` builds a ``PrometheusConnect`` (URL, headers, auth, a
``requests`` session carrying TLS verification or the CA bundle) with urllib3 retries
turned off, and does its own GETs on that session: the client's parsed helpers build a
Python object per sample, far too slow here. Failed attempts are retried with exponential
backoff and jitter on 429, 5xx, connection errors and timeouts, waiting ``Retry-After``
when the server sends it. After the last attempt, or at once for a non-retryable answer
(400 bad query, 422 "too many samples"), :class:`PrometheusQueryError` names the URL, the
PromQL, the window, the HTTP status and the server's error text. Nothing is ever returned
for a failed request.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import urlencode

import numpy as np
import requests
import requests.auth
import urllib3
from prometheus_api_client import PrometheusConnect
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from config.cluster import PrometheusConfig
from config.urls import redact_url, without_userinfo
from sources.metrics import MetricsSourceError
from sources.prometheus.body import read_into
from sources.prometheus.concurrency import parallel_requests
from sources.prometheus.decode import server_error
from sources.prometheus.scratch import Scratch

__all__ = ["Backoff", "PrometheusClient", "PrometheusQueryError", "auth_from_env"]

NO_RETRY = Retry(total=0, raise_on_status=False)  # retries are ours (below), not urllib3's
POST_ABOVE = 4096  # longer parameter strings (many host shards) go in a POST body
# Refusals a smaller request (fewer hosts, less time) may pass. Samples: Prometheus ("query
# processing would load too many samples into memory"), Thanos/Mimir ("max-samples", "exceeded
# the maximum number of samples"), VictoriaMetrics ("cannot select more than
# -search.maxSamplesPerQuery=N samples", "-search.maxSamplesPerSeries"). Series:
# VictoriaMetrics ("the number of matching timeseries exceeds N"), Mimir (its error id).
TOO_MANY_SAMPLES = (
    "too many samples",
    "max-samples",
    "exceeded the maximum number of samples",
    "-search.maxsamplesperquery",
    "-search.maxsamplesperseries",
    "the number of matching timeseries exceeds",
    "err-mimir-max-series-per-query",
)
# urllib3's errors come from reading the body directly (a short body is IncompleteRead).
TRANSPORT_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    urllib3.exceptions.HTTPError,
)


class PrometheusQueryError(MetricsSourceError):
    """A request failed for good (after retries, or refused outright)."""

    def __init__(
        self, message: str, *, url: str, query: str, window: str, status: int | None, error: str, attempts: int
    ) -> None:
        super().__init__(message)
        self.url, self.query, self.window, self.status = url, query, window, status
        self.error, self.attempts = error, attempts

    @property
    def too_many_samples(self) -> bool:
        """The server refused the query for its size (samples or series): a smaller query may pass."""
        text = self.error.lower()
        return self.status is not None and any(marker in text for marker in TOO_MANY_SAMPLES)


@dataclass
class Backoff:
    """Exponential backoff with jitter: attempt ``n`` waits ``base * 2**n`` capped at ``cap``,
    uniformly between half and all of it; a ``Retry-After`` from the server wins (up to
    ``max_retry_after``)."""

    base_seconds: float = 0.5
    cap_seconds: float = 30.0
    max_retry_after: float = 300.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.cap_seconds, self.base_seconds * 2**attempt)
        return ceiling / 2 + self.rng.uniform(0.0, ceiling / 2)


@dataclass(frozen=True)
class _Failure:
    status: int | None  # None: no HTTP response at all
    error: str
    retry_after: float | None = None
    transient: bool = True  # for failures without a response: a TLS error is not

    @property
    def retryable(self) -> bool:
        return self.transient if self.status is None else self.status == 429 or self.status >= 500


Auth = tuple[dict[str, str], tuple[str, str] | None]  # headers, basic auth


def auth_from_env(config: PrometheusConfig, environ: Mapping[str, str]) -> Auth:
    """(headers, basic auth) from the environment variables the config names."""

    def read(name: str) -> str:
        value = environ.get(name)
        if not value:
            raise MetricsSourceError(f"environment variable {name} (named in the Prometheus config) is not set")
        return value

    if config.bearer_token_env:
        return {"Authorization": f"Bearer {read(config.bearer_token_env)}"}, None
    if config.basic_auth_user_env and config.basic_auth_password_env:
        return {}, (read(config.basic_auth_user_env), read(config.basic_auth_password_env))
    return {}, None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds from now."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - (time.time() if now is None else now)
    except (TypeError, ValueError):
        return None


def _read_body(response: requests.Response, into: Scratch | None = None) -> bytes | np.ndarray:
    """The whole body in one read (requests' ``.content`` loops over 10 KB pieces: 2-3x the CPU),
    of a 200 answer into a buffer from ``into`` when given (``body.read_into``); the
    connection goes back to the pool afterwards, or is closed if reading failed."""
    try:
        if into is not None and response.status_code == 200:
            body = read_into(response, into.take, into.give, into.body_guess())
            if isinstance(body, np.ndarray):
                into.saw_body(len(body))
        else:
            body = response.raw.read(decode_content=True)
    except BaseException:
        response.close()
        raise
    response.raw.release_conn()
    return body


class _ConfiguredAuth(requests.auth.AuthBase):
    """Exactly the configured credentials (basic auth, or none: a bearer token is a header).
    Given on every request, so requests never takes others from the URL or ``~/.netrc``,
    which would replace the configured bearer token."""

    def __init__(self, basic: tuple[str, str] | None) -> None:
        self.basic = requests.auth.HTTPBasicAuth(*basic) if basic is not None else None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        return self.basic(request) if self.basic is not None else request


class PrometheusClient:
    """GETs (POSTs for very long queries) returning the raw body of a 200 response.

    Credentials are ``headers`` (a bearer token) and ``auth`` (basic), nothing else: user info
    in ``url`` is dropped (the config rejects it) and ``~/.netrc`` is not read. URLs in
    errors go through ``redact_url``.

    Responses are asked for uncompressed unless ``compress``: Prometheus gzips at tens of
    MB/s per core, which made a local 53 MB read 5x slower (1.8 s instead of 0.35 s); over a
    slow WAN link compression can pay off.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        verify: bool | str = True,
        timeout_seconds: float = 60.0,
        max_retries: int = 5,
        pool_size: int = 10,
        compress: bool = False,
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        session = requests.Session()
        session.verify = verify
        self.url = without_userinfo(url.rstrip("/"))  # credentials come from ``headers``/``auth`` only
        self.connection = PrometheusConnect(
            url=self.url,
            headers=dict(headers or {}),
            auth=auth,
            retry=NO_RETRY,
            session=session,
            timeout=timeout_seconds,
        )
        self._auth = _ConfiguredAuth(auth)
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=max(pool_size, 1), max_retries=NO_RETRY)
        session.mount(self.url, adapter)
        self._session = session
        self._headers = {**self.connection.headers, **({} if compress else {"Accept-Encoding": "identity"})}
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.backoff = backoff or Backoff()
        self._sleep = sleep

    @classmethod
    def from_config(
        cls, config: PrometheusConfig, environ: Mapping[str, str] | None = None, **options: object
    ) -> PrometheusClient:
        """Credentials are read from the environment now (not at import)."""
        headers, auth = auth_from_env(config, os.environ if environ is None else environ)
        verify: bool | str = str(config.ca_bundle) if config.verify_tls and config.ca_bundle else config.verify_tls
        return cls(
            config.url,
            headers=headers,
            auth=auth,
            verify=verify,
            timeout_seconds=config.timeout_seconds,
            max_retries=config.max_retries,
            pool_size=parallel_requests(config.max_parallel_requests, config.url),
            **options,
        )

    def close(self) -> None:
        self.connection.close()

    def undecodable(self, path: str, query: str, window: str, reason: Exception) -> PrometheusQueryError:
        """The error for a 200 answer that is not what was asked for (never used as data)."""
        url = redact_url(self.url + path)
        return PrometheusQueryError(
            f"undecodable answer from {url} for query {query!r} window {window}: {reason}",
            url=url,
            query=query,
            window=window,
            status=200,
            error=str(reason),
            attempts=1,
        )

    def get(
        self, path: str, params: Mapping[str, str], *, query: str, window: str, into: Scratch | None = None
    ) -> bytes | np.ndarray:
        """The body of a 200 answer to ``path?params``; ``query``/``window`` only name it in errors.
        With ``into``, usually a uint8 array over a buffer from it (``body.read_into``: the
        caller gives it back), else ``bytes``."""
        url = self.url + path
        attempt = 0
        while True:
            outcome = self._attempt(url, params, into)
            if not isinstance(outcome, _Failure):
                return outcome
            if not outcome.retryable or attempt >= self.max_retries:
                raise self._error(url, query, window, outcome, attempt + 1)
            self._sleep(self.backoff.delay(attempt, outcome.retry_after))
            attempt += 1

    def _attempt(
        self, url: str, params: Mapping[str, str], into: Scratch | None = None
    ) -> bytes | np.ndarray | _Failure:
        post = len(urlencode(params)) > POST_ABOVE
        try:
            response = self._session.request(
                "POST" if post else "GET",
                url,
                params=None if post else params,
                data=params if post else None,
                headers=self._headers,
                auth=self._auth,
                timeout=self.timeout_seconds,
                stream=True,
            )
            body = _read_body(response, into)
        except TRANSPORT_ERRORS as exc:
            tls = isinstance(exc, requests.exceptions.SSLError)
            return _Failure(None, f"{type(exc).__name__}: {exc}", transient=not tls)
        if response.status_code == 200:
            return body
        error_type, error = server_error(body)
        text = f"{error_type}: {error}" if error is not None else body[:500].decode("utf-8", "replace").strip()
        return _Failure(response.status_code, text, retry_after_seconds(response.headers.get("Retry-After")))

    def _error(self, url: str, query: str, window: str, failure: _Failure, attempts: int) -> PrometheusQueryError:
        shown = redact_url(url)
        status = f"HTTP {failure.status}" if failure.status is not None else "no HTTP response"
        message = (
            f"Prometheus request failed after {attempts} attempt(s): {shown} query {query!r} "
            f"window {window}: {status}: {failure.error}"
        )
        return PrometheusQueryError(
            message,
            url=shown,
            query=query,
            window=window,
            status=failure.status,
            error=failure.error,
            attempts=attempts,
        )
