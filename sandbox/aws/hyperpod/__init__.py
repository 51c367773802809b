"""SageMaker HyperPod clusters, implemented here end to end (moto's model drops fields and has no
update/node operations). Shapes follow the botocore sagemaker model; timings follow world.DURATIONS.

store.py     cluster records, lookups, events, validation, the DescribeCluster view
capacity.py  where groups launch, new nodes with their addresses, training-plan usage
limits.py    the account-level instance quotas (ResourceLimitExceeded)
clusters.py  Create/Describe/List/Delete/UpdateCluster, UpdateClusterSoftware
nodes.py     node batch operations, ListClusterNodes, DescribeClusterNode, ListClusterEvents
ticks.py     the controller tick and the nodes handed to the Kubernetes half
"""

# Importing the package registers the action handlers of its modules.
from sandbox.aws.hyperpod import clusters, nodes  # noqa: E402,F401
