"""Build the ``affinity_graph`` service a configuration's CommunicationAffinity profiles read.

``harmonic run`` and ``harmonic extender`` call ``graph_services`` once at start-up: every profile that
enables CommunicationAffinity with ``telemetry`` sources shares one graph (handle services are per
scheduler, not per profile), so those profiles must agree on the telemetry; profiles without
``telemetry`` get no service and the plugin skips with a warning (no signal). The caller starts the
service's refresher thread and stops it on shutdown. The simulator builds its own, fed by its mesh,
when a profile gives no telemetry (``harmonic.sim.mesh``).
"""

from __future__ import annotations

from harmonic.framework.config import ConfigError, Profile, SchedulerConfiguration
from harmonic.plugins.communicationaffinity.plugin import GRAPH_SERVICE, CommunicationAffinity
from harmonic.signals.config import TelemetryConfig
from harmonic.signals.service import GraphService

PLUGIN = CommunicationAffinity.NAME


def profile_telemetry(profile: Profile) -> TelemetryConfig | None:
    """The telemetry args of ``profile``'s CommunicationAffinity (None: the plugin is not enabled or
    has no ``telemetry``)."""
    if PLUGIN not in profile.plugin_names:
        return None
    telemetry: TelemetryConfig | None = getattr(profile.args[PLUGIN], "telemetry", None)
    return telemetry


def configured_telemetry(config: SchedulerConfiguration) -> TelemetryConfig | None:
    """The telemetry the CommunicationAffinity profiles configure (None: none does); a ConfigError
    when two profiles configure different telemetry."""
    found: dict[str, TelemetryConfig] = {}
    for profile in config.profiles:
        telemetry = profile_telemetry(profile)
        if telemetry is not None and telemetry.has_sources:
            found[profile.scheduler_name] = telemetry
    if not found:
        return None
    first_name, first = next(iter(found.items()))
    for name, telemetry in found.items():
        if telemetry != first:
            raise ConfigError(
                f"{config.source}: profiles {first_name!r} and {name!r} give CommunicationAffinity "
                "different telemetry args; one affinity graph serves every profile, so give them the same"
            )
    return first


def graph_services(config: SchedulerConfiguration) -> dict[str, GraphService]:
    """``{"affinity_graph": service}`` when a profile configures telemetry, else ``{}``. Reads topology
    and AppGroup files now, so a missing file is an error at start-up."""
    telemetry = configured_telemetry(config)
    return {} if telemetry is None else {GRAPH_SERVICE: telemetry.build()}
