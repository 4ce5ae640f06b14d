"""Delegated authentication and authorization of the secure port, against kube-apiserver's review
semantics (upstream's union authenticator, path authorizer, privileged groups and review caches)."""

from __future__ import annotations

from typing import Any

import pytest

from harmonic.cluster.delegated import (
    ACCESS_REVIEWS,
    ANONYMOUS,
    AUTHENTICATED,
    TOKEN_REVIEWS,
    UNAUTHENTICATED,
    DelegatedAuth,
    User,
    path_allowed,
)

USERS = {"good": ("scraper", ["metrics-readers"]), "admin": ("root", ["system:masters"])}
GRANTS = {("scraper", "get", "/metrics"), ("metrics-readers", "get", "/debug/decisions")}


class FakeApi:
    """Answers reviews from USERS and GRANTS and counts the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.down = False

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        self.calls.append((path, body))
        if self.down:
            raise ConnectionError("connection refused")
        spec = body["spec"]
        if path == TOKEN_REVIEWS:
            found = USERS.get(spec["token"])
            if found is None:
                return {"status": {"authenticated": False}}
            return {"status": {"authenticated": True, "user": {"username": found[0], "groups": found[1]}}}
        attrs = spec["nonResourceAttributes"]
        subjects = [spec["user"], *spec["groups"]]
        return {"status": {"allowed": any((s, attrs["verb"], attrs["path"]) in GRANTS for s in subjects)}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(api: FakeApi | None = None, clock: Clock | None = None, **kw: Any) -> DelegatedAuth:
    api = api if api is not None else FakeApi()
    return DelegatedAuth(api, api, clock=clock or Clock(), **kw)


@pytest.mark.parametrize(
    "method, path, authorization, code, calls",
    [
        # kube-scheduler: a scrape without credentials is anonymous, and RBAC forbids it
        ("GET", "/metrics", "", 403, [ACCESS_REVIEWS]),
        ("GET", "/metrics", "Bearer good", None, [TOKEN_REVIEWS, ACCESS_REVIEWS]),
        # a token the API server rejects is 401 (not anonymous)
        ("GET", "/metrics", "Bearer stolen", 401, [TOKEN_REVIEWS]),
        # granted to one of the user's groups
        ("GET", "/debug/decisions", "Bearer good", None, [TOKEN_REVIEWS, ACCESS_REVIEWS]),
        # the verb is the lower-cased method: a get grant does not cover post
        ("POST", "/metrics", "Bearer good", 403, [TOKEN_REVIEWS, ACCESS_REVIEWS]),
        ("GET", "/debug/model", "Bearer good", 403, [TOKEN_REVIEWS, ACCESS_REVIEWS]),
        # the always-allowed paths: no review at all, without or with credentials
        ("GET", "/healthz", "", None, []),
        ("GET", "/livez", "", None, []),
        ("GET", "/readyz", "Bearer good", None, [TOKEN_REVIEWS]),
        # system:masters skips authorization
        ("GET", "/debug/model", "Bearer admin", None, [TOKEN_REVIEWS]),
        # other schemes are no credentials (anonymous), as upstream's bearer authenticator
        ("GET", "/metrics", "Basic Zm9vOmJhcg==", 403, [ACCESS_REVIEWS]),
        ("GET", "/metrics", "Bearer ", 403, [ACCESS_REVIEWS]),
    ],
)
def test_check(method: str, path: str, authorization: str, code: int | None, calls: list[str]) -> None:
    api = FakeApi()
    denial = make(api).check(method, path, authorization, None)
    assert (denial.code if denial else None) == code
    assert [c[0] for c in api.calls] == calls


def test_the_forbidden_message_names_the_user_verb_and_path_as_kube_apiserver() -> None:
    denial = make().check("GET", "/metrics", "", None)
    assert denial is not None
    assert denial.message == f'forbidden: User "{ANONYMOUS}" cannot get path "/metrics"'


def test_the_review_carries_the_user_and_its_groups() -> None:
    api = FakeApi()
    make(api).check("GET", "/metrics", "", None)
    spec = api.calls[0][1]["spec"]
    assert (spec["user"], spec["groups"]) == (ANONYMOUS, [UNAUTHENTICATED])
    api.calls.clear()
    make(api).check("GET", "/metrics", "Bearer good", None)
    spec = api.calls[1][1]["spec"]
    assert (spec["user"], spec["groups"]) == ("scraper", ["metrics-readers", AUTHENTICATED])


def test_a_client_certificate_user_needs_no_token_review() -> None:
    api = FakeApi()
    assert make(api).check("GET", "/metrics", "Bearer stolen", User("scraper", (AUTHENTICATED,))) is None
    assert [c[0] for c in api.calls] == [ACCESS_REVIEWS]


@pytest.mark.parametrize(
    "authorization, path, ttl_option, refetched",
    [
        # upstream's defaults: tokens 10 s, allowed 10 s, denied 10 s
        ("Bearer good", "/metrics", {}, TOKEN_REVIEWS),
        ("Bearer stolen", "/metrics", {}, TOKEN_REVIEWS),
        ("", "/metrics", {}, ACCESS_REVIEWS),
        ("Bearer good", "/debug/model", {"token_ttl": 60.0}, ACCESS_REVIEWS),
    ],
)
def test_answers_are_cached_for_their_ttl(
    authorization: str, path: str, ttl_option: dict[str, float], refetched: str
) -> None:
    api, clock = FakeApi(), Clock()
    auth = make(api, clock, **ttl_option)
    first = auth.check("GET", path, authorization, None)
    n = len(api.calls)
    clock.now = 9.9
    assert auth.check("GET", path, authorization, None) == first
    assert len(api.calls) == n  # within the TTL: no call
    clock.now = 10.1
    assert auth.check("GET", path, authorization, None) == first
    assert refetched in [c[0] for c in api.calls[n:]]


def test_an_unreachable_api_server_fails_the_request_and_is_not_cached() -> None:
    api = FakeApi()
    auth = make(api)
    api.down = True
    assert auth.check("GET", "/metrics", "Bearer good", None).code == 401  # type: ignore[union-attr]
    denial = auth.check("GET", "/metrics", "", None)
    assert denial is not None and denial.code == 500
    api.down = False
    assert auth.check("GET", "/metrics", "Bearer good", None) is None


def test_without_a_client_only_the_always_allowed_paths_pass() -> None:
    auth = DelegatedAuth(None, None)
    assert auth.check("GET", "/healthz", "", None) is None
    assert auth.check("GET", "/metrics", "", None).code == 403  # type: ignore[union-attr]
    assert auth.check("GET", "/metrics", "Bearer good", None).code == 401  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "path, patterns, allowed",
    [
        ("/healthz", ["/healthz"], True),
        ("/healthz/etcd", ["/healthz"], False),
        ("/healthz/etcd", ["/healthz/*"], True),
        ("/debug/decisions", ["debug/*"], True),  # the leading / is optional
        ("/metrics", ["/metrics/*"], False),
        ("/metrics", [], False),
    ],
)
def test_path_allowed(path: str, patterns: list[str], allowed: bool) -> None:
    assert path_allowed(path, patterns) is allowed
