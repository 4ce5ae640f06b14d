"""The simulator's ground truth: how the simulated world really behaves.

Request routing between replicas (``routing``), the interference neighbours really inflict
(``interference``), the latency users really see (``latency``) and what survives a failure
(``availability``), with their configuration (``config``, the scenario's ``groundTruth``, ``routing`` and
``mesh`` blocks). Metrics that judge a placement are computed here (``observer``), from the simulated
cluster's pods — never from the scheduler's cache.

Nothing under ``harmonic/plugins``, ``harmonic/signals`` or ``harmonic/framework`` may import this
package (a test enforces it): schedulers learn about the world only through signals, such as the mesh
telemetry the simulator derives from the traffic computed here (``harmonic.sim.mesh``). The defaults
deliberately differ from the Dissonance plugin's model: the plugin is a model of the world, not the world.
"""
