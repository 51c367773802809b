"""The lifecycle scripts HyperPod runs on every new instance (uploaded by the identity phase)."""

ON_CREATE = """#!/bin/bash
# InstantStart lifecycle script for HyperPod (EKS orchestrator), run once per new instance.
set -euo pipefail
LOG=/var/log/provision/instantstart-on-create.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[instantstart] on_create starting on $(hostname)"

# Local NVMe (when present) for containerd and kubelet, so images and scratch data do not fill the root volume.
if ls /dev/nvme*n1 >/dev/null 2>&1 && [ -x /opt/sagemaker/bin/mount-local-nvme ]; then
  /opt/sagemaker/bin/mount-local-nvme /opt/sagemaker || true
fi

# Larger limits for data loaders and NCCL.
cat >/etc/security/limits.d/90-instantstart.conf <<'LIMITS'
* soft nofile 1048576
* hard nofile 1048576
* soft memlock unlimited
* hard memlock unlimited
LIMITS

echo "[instantstart] on_create done"
"""

LIFECYCLE_SCRIPTS = {"on_create.sh": ON_CREATE}
