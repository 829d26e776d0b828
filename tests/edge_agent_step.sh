#!/bin/sh
# The edge agent in step mode (kctl_manager_step on the main thread, sleeping
# until each deadline or a wake-up): tests/matrix.sh runs it as one test,
# passed when the agent converges (exit 0). KT_EDGE_AGENT names the binary
# (the sanitizer builds set it); EDGE_AGENT_STATE gets a "-step" suffix.
state="${EDGE_AGENT_STATE:-build/edge-agent}-step"
rm -rf "$state"
EDGE_AGENT_STEP=1 EDGE_AGENT_STATE="$state" exec "./${KT_EDGE_AGENT:-build/edge_agent}"
