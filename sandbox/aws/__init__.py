"""The AWS half of the sandbox: moto underneath, completed.

app.py                 WSGI front: account, call counting, faults, our handlers or moto
handlers.py            the registry of our actions (`handles`) and the context a handler gets
protocol.py            request parsing (service/action from botocore models) and error shapes
world.py               our own state, timings (DURATIONS / speedup), snapshots of moto + our state
lifecycle.py           the controller tick and the desired Kubernetes picture (clusters, nodes, add-ons)
eks_clusters.py        EKS cluster / nodegroup timing and failures on top of moto
eks_addons.py          EKS add-ons            eks_access.py   pod identity, access entries/policies
eks_updates.py         version updates, DescribeUpdate/ListUpdates, cluster versions
eks_update_log.py      the update records   eks_records.py  the creator access entry, policy names
hyperpod/              HyperPod clusters, nodes, node batch operations, events (one module per role)
sagemaker_misc.py      training plans, tags of our resources
sagemaker_mlflow.py    MLflow tracking servers and Apps, each a real `mlflow server` (sandbox/mlflow_server.py)
quotas.py              Service Quotas values      iam_ext.py  AWS-managed policies on demand
ec2_ext.py             NAT gateway and FSx timing, Elastic IPs from documentation ranges
addresses.py           node and pod addresses from the subnets (ENIs, the VPC CNI's pools)
constraints.py         the model's server-side input constraints (ValidationException)
sts_trust.py           AssumeRole against the role's trust policy (sts:ExternalId)
instance_types.py      GPU/EFA/CPU facts
"""
