"""CommunicationAffinity: place pods near the workloads they talk to (see ``plugin``)."""

from harmonic.plugins.communicationaffinity.plugin import CommunicationAffinity, CommunicationAffinityArgs

__all__ = ["CommunicationAffinity", "CommunicationAffinityArgs"]
