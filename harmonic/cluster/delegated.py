"""Delegated authentication and authorization of the scheduler's secure port, as kube-scheduler's
(k8s.io/apiserver's ``DelegatingAuthenticationOptions``/``DelegatingAuthorizationOptions``):

- authentication: a verified client certificate (CN the user, O the groups), else a bearer token
  checked by a ``TokenReview``, else the anonymous user. A token the API server rejects is 401, not
  anonymous (upstream's union authenticator fails on error before it falls back to anonymous).
- authorization: paths in ``--authorization-always-allow-paths`` (``/healthz``, ``/readyz``,
  ``/livez`` by default; a trailing ``*`` is a prefix) and members of ``system:masters`` pass
  without a call; anything else is a ``SubjectAccessReview`` of the non-resource URL with the
  request's lower-cased method as verb.
- answers are cached as upstream does: 10 s for tokens, 10 s allowed, 10 s denied (all tunable).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = ("system:masters",)
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"

#: One API call: (path, body) -> the decoded answer; raises on transport or status errors.
Post = Callable[[str, dict[str, Any]], Any]


class ReviewError(Exception):
    """A review could not be made (the API server unreachable or erroring); nothing is cached."""


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


@dataclass(frozen=True)
class Denial:
    """Why a request is refused: the HTTP status (401, 403, or 500 when a review failed) and kube-apiserver's message."""

    code: int
    message: str


class _TTLCache:
    """Answers kept for their time to live; a lock because the server answers on many threads."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._items: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> tuple[bool, Any]:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return False, None
            if hit[0] <= self._clock():
                del self._items[key]
                return False, None
            return True, hit[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            if len(self._items) > 4096:  # bound memory against many distinct tokens: drop expired first
                now = self._clock()
                self._items = {k: v for k, v in self._items.items() if v[0] > now}
            self._items[key] = (self._clock() + ttl, value)


def path_allowed(path: str, patterns: Iterable[str]) -> bool:
    """upstream's path authorizer: exact match, or prefix match for a pattern ending in ``*``; a
    leading ``/`` is optional in the pattern."""
    for p in patterns:
        p = p if p.startswith("/") else "/" + p
        if (p.endswith("*") and path.startswith(p[:-1])) or path == p:
            return True
    return False


class DelegatedAuth:
    """``check(method, path, authorization, cert_user)`` is None when the request may proceed, else the
    ``Denial`` to answer with. ``authn``/``authz`` post reviews to the API server; None means no
    client, and then (as upstream) tokens are not reviewed and nothing outside the always-allowed
    paths and groups is authorized."""

    def __init__(
        self,
        authn: Post | None,
        authz: Post | None,
        *,
        always_allow_paths: Iterable[str] = ALWAYS_ALLOW_PATHS,
        always_allow_groups: Iterable[str] = ALWAYS_ALLOW_GROUPS,
        token_ttl: float = 10.0,
        allow_ttl: float = 10.0,
        deny_ttl: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._authn, self._authz = authn, authz
        self._paths = tuple(always_allow_paths)
        self._groups = frozenset(always_allow_groups)
        self._token_ttl, self._allow_ttl, self._deny_ttl = token_ttl, allow_ttl, deny_ttl
        self._tokens = _TTLCache(clock)
        self._decisions = _TTLCache(clock)

    def check(self, method: str, path: str, authorization: str, cert_user: User | None) -> Denial | None:
        try:
            user = self.authenticate(authorization, cert_user)
        except ReviewError:
            user = None  # upstream: an authenticator's error is a 401
        if user is None:
            return Denial(401, "Unauthorized")
        verb = method.lower()
        try:
            allowed, reason = self.authorize(user, verb, path)
        except ReviewError as e:  # upstream: an authorizer's error is a 500
            return Denial(500, f"Internal Server Error: {path}: {e}")
        if allowed:
            return None
        why = f": {reason}" if reason else ""
        return Denial(403, f'forbidden: User "{user.name}" cannot {verb} path "{path}"{why}')

    def authenticate(self, authorization: str, cert_user: User | None) -> User | None:
        """The request's user; None when it presents a token the API server does not accept."""
        if cert_user is not None:
            return cert_user
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            # upstream's bearer-token authenticator ignores other schemes and empty tokens
            return User(ANONYMOUS, (UNAUTHENTICATED,))
        hit, user = self._tokens.get(token)
        if hit:
            return user
        user = self._review_token(token)
        self._tokens.put(token, user, self._token_ttl)
        return user

    def _review_token(self, token: str) -> User | None:
        if self._authn is None:
            return None
        try:
            answer = self._authn(
                TOKEN_REVIEWS,
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
            )
        except Exception as e:  # the API server unreachable or erroring
            log.warning("TokenReview failed", extra={"error": str(e)})
            raise ReviewError(str(e)) from e
        status = (answer or {}).get("status") or {}
        if not status.get("authenticated"):
            return None
        info = status.get("user") or {}
        groups = list(info.get("groups") or [])
        if AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)  # upstream's AuthenticatedGroupAdder
        extra = tuple(sorted((k, tuple(v or ())) for k, v in (info.get("extra") or {}).items()))
        return User(str(info.get("username") or ""), tuple(groups), str(info.get("uid") or ""), extra)

    def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        if self._groups.intersection(user.groups) or path_allowed(path, self._paths):
            return True, ""
        if self._authz is None:
            return False, ""
        key = (user, verb, path)
        hit, answer = self._decisions.get(key)
        if hit:
            return answer
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        try:
            review = self._authz(
                ACCESS_REVIEWS,
                {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
            )
        except Exception as e:
            log.warning("SubjectAccessReview failed", extra={"error": str(e)})
            raise ReviewError(str(e)) from e
        status: Mapping[str, Any] = (review or {}).get("status") or {}
        answer = (bool(status.get("allowed")) and not status.get("denied"), str(status.get("reason") or ""))
        self._decisions.put(key, answer, self._allow_ttl if answer[0] else self._deny_ttl)
        return answer
