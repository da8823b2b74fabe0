#!/bin/sh
# Starts a Rill broker in a StatefulSet pod. The broker's node id is the pod's ordinal:
# from the apps.kubernetes.io/pod-index label (Kubernetes 1.28+, passed as K8S_POD_INDEX),
# or else from the number that ends the pod name (rill-broker-2 -> 2).
set -eu

index="${K8S_POD_INDEX:-}"
if [ -z "$index" ]; then
  name="${K8S_POD_NAME:-${HOSTNAME:-}}"
  index="${name##*-}"
fi

case "$index" in
  '' | *[!0-9]*)
    echo "rill startup: cannot derive the node id: pod index '${K8S_POD_INDEX:-}'," \
      "pod name '${K8S_POD_NAME:-${HOSTNAME:-}}' does not end in -<ordinal>." \
      "Run the broker in the chart's StatefulSet, or set cluster.node-id yourself." >&2
    exit 64
    ;;
esac

# Ordinals have no leading zeros, but a hand-set index might: 007 is node 7.
while [ "$index" != "0" ] && [ "${index#0}" != "$index" ]; do
  index="${index#0}"
done
export RILL_CLUSTER__NODE_ID="$index"
echo "rill startup: node id $RILL_CLUSTER__NODE_ID" >&2
# `startup.sh restore --backup-id N`: the restore init container, as this broker's node.
if [ "${1:-}" = "restore" ]; then
  shift
  exec rill restore "$@"
fi
exec rill broker "$@"
