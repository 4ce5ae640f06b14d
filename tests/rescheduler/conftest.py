"""The API-server double and transports of the live-cluster tests, for the live rescheduler's tests."""

from tests.cluster.conftest import api, make_transport, transport

__all__ = ["api", "make_transport", "transport"]
