"""The simulator: replay a cluster and its workload under one or more scheduler profiles side by side.

``load_scenario`` reads a scenario file, ``Simulation`` runs it (the real ``Scheduler`` against the
in-memory cluster, one cluster copy per profile, virtual clock), ``write_report`` writes metrics.json
and report.html.
"""
