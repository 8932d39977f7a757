"""The workflow runner: roadmap tasks driven through stage agents, gates,
dual review and integration, each step checked by the host (SPEC §7).

Layer 5: may import integrate/, assess/, tasks/, workspace/, store/, git/ and
the shared helpers, always through ``host`` for the domain entry points.
"""
