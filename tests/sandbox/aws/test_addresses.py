"""Addresses as a VPC really hands them out: node IPs from the group's subnet, the same in HyperPod
and Kubernetes, the subnet's free count going down and back up, pods on addresses of their node's
VPC CNI pool, public addresses from a documentation range."""

from __future__ import annotations

import ipaddress

from kubernetes import client

from sandbox.aws.addresses import network_facts
from tests.sandbox.conftest import eks_cluster, hyperpod, network, wait_for
from tests.sandbox.kube.conftest import TOKEN, deployment


def kube(endpoint: str) -> client.CoreV1Api:
    cfg = client.Configuration(host=endpoint)
    cfg.api_key = {"authorization": f"Bearer {TOKEN}"}
    return client.CoreV1Api(client.ApiClient(cfg))


def free(acct, subnet: str) -> int:
    return acct.ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["AvailableIpAddressCount"]


def in_service(acct, name: str) -> None:
    wait_for(lambda: acct.sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")


def test_node_addresses_come_from_the_subnet_and_agree_in_hyperpod_ec2_and_kubernetes(account):
    eks = eks_cluster(account)
    subnet = eks["net"]["subnets"][1]
    cidr = ipaddress.ip_network(account.ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["CidrBlock"])
    start = free(account, subnet)
    hyperpod(
        account,
        "hp",
        eks,
        [
            {"InstanceGroupName": "efa", "InstanceType": "ml.p5.48xlarge", "InstanceCount": 2},
            {
                "InstanceGroupName": "efa-only",
                "InstanceType": "ml.p5.48xlarge",
                "InstanceCount": 1,
                "NetworkInterface": {"InterfaceType": "efa-only"},
            },
            {"InstanceGroupName": "small", "InstanceType": "ml.g5.xlarge", "InstanceCount": 1},
        ],
    )
    in_service(account, "hp")

    details = [
        account.sagemaker.describe_cluster_node(ClusterName="hp", NodeId=n["InstanceId"])["NodeDetails"]
        for n in account.sagemaker.list_cluster_nodes(ClusterName="hp")["ClusterNodeSummaries"]
    ]
    ips = {d["InstanceId"]: d["PrivatePrimaryIp"] for d in details}
    zone_id = account.ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["AvailabilityZoneId"]
    assert {d["Placement"]["AvailabilityZoneId"] for d in details} == {zone_id}
    assert len(set(ips.values())) == 4 and all(ipaddress.ip_address(ip) in cidr for ip in ips.values())
    assert all(
        d["PrivateDnsHostname"] == f"ip-{d['PrivatePrimaryIp'].replace('.', '-')}.us-west-2.compute.internal"
        for d in details
    )

    # Kubernetes shows the same address as InternalIP, and HyperPod's DNS name as InternalDNS.
    core = kube(eks["endpoint"])
    nodes = wait_for(lambda: (items := core.list_node().items) and len(items) == 4 and items)
    for node in nodes:
        addresses = {a.type: a.address for a in node.status.addresses}
        iid = node.metadata.name.removeprefix("hyperpod-")
        assert addresses["InternalIP"] == ips[iid]
        assert addresses["InternalDNS"] == f"ip-{ips[iid].replace('.', '-')}.us-west-2.compute.internal"

    # Each node took its ENI, the VPC CNI's first pool of pod addresses and an address per EFA
    # interface: efa-only interfaces take none, which is what they are for.
    p5, g5 = network_facts("ml.p5.48xlarge"), network_facts("ml.g5.xlarge")
    efa_node = p5["ips_per_eni"] + p5["efa"] - 1  # 81 on a p5.48xlarge
    efa_only_node = p5["ips_per_eni"]
    assert free(account, subnet) == start - 2 * efa_node - efa_only_node - g5["ips_per_eni"]
    enis = account.ec2.describe_network_interfaces(Filters=[{"Name": "subnet-id", "Values": [subnet]}])
    primaries = {e["PrivateIpAddress"] for e in enis["NetworkInterfaces"]}
    assert set(ips.values()) <= primaries

    # Terminated instances give their addresses back.
    account.sagemaker.delete_cluster(ClusterName="hp")
    wait_for(lambda: not account.sagemaker.list_clusters()["ClusterSummaries"])
    assert free(account, subnet) == start


def test_pods_take_addresses_of_their_nodes_pool_and_host_network_pods_the_nodes_own(account):
    eks = eks_cluster(account)
    subnet = eks["net"]["subnets"][1]
    cidr = ipaddress.ip_network(account.ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["CidrBlock"])
    hyperpod(account, "hp", eks, [{"InstanceGroupName": "g", "InstanceType": "ml.g5.xlarge", "InstanceCount": 1}])
    in_service(account, "hp")
    core = kube(eks["endpoint"])
    node = wait_for(lambda: core.list_node().items)[0]
    node_ip = next(a.address for a in node.status.addresses if a.type == "InternalIP")
    before = free(account, subnet)

    apps = client.AppsV1Api(core.api_client)
    agent = deployment("agent", replicas=1, hostNetwork=True)
    apps.create_namespaced_deployment("default", agent)
    pool = network_facts("ml.g5.xlarge")["ips_per_eni"] - 1  # 14 secondary addresses on its ENI
    apps.create_namespaced_deployment("default", deployment("web", replicas=pool + 4))

    def running(label: str) -> list[client.V1Pod]:
        pods = core.list_namespaced_pod("default", label_selector=label).items
        return pods if pods and all(p.status.phase == "Running" for p in pods) else []

    assert [p.status.pod_ip for p in wait_for(lambda: running("app=agent"))] == [node_ip]
    web = wait_for(lambda: len(pods := running("app=web")) == pool + 4 and pods, timeout=20)
    web_ips = [p.status.pod_ip for p in web]
    assert len(set(web_ips)) == pool + 4 and node_ip not in web_ips
    assert all(ipaddress.ip_address(ip) in cidr for ip in web_ips)
    assert all(p.status.host_ip == node_ip for p in web)
    # more pods than the first pool: aws-node attached one more ENI full of addresses
    assert free(account, subnet) == before - network_facts("ml.g5.xlarge")["ips_per_eni"]


def test_a_subnet_without_free_addresses_fails_the_group_with_ec2s_error(account):
    eks = eks_cluster(account)
    vpc = eks["net"]["vpc"]
    tiny = account.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.255.240/28", AvailabilityZone="us-west-2b")["Subnet"]
    assert tiny["AvailableIpAddressCount"] == 11  # 16 less the 5 AWS keeps
    arn = eks["arn"]
    exec_role = account.iam.create_role(RoleName="x", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    account.sagemaker.create_cluster(
        ClusterName="tiny",
        InstanceGroups=[
            {
                "InstanceGroupName": "g",
                "InstanceType": "ml.g5.xlarge",  # an ENI of 15 addresses does not fit in 11
                "InstanceCount": 1,
                "ExecutionRole": exec_role,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/lc/", "OnCreate": "on_create.sh"},
            }
        ],
        Orchestrator={"Eks": {"ClusterArn": arn}},
        VpcConfig={"SecurityGroupIds": [eks["net"]["sg"]], "Subnets": [tiny["SubnetId"]]},
    )
    failed = wait_for(
        lambda: (d := account.sagemaker.describe_cluster(ClusterName="tiny"))["ClusterStatus"] == "Failed" and d
    )
    assert "InsufficientFreeAddressesInSubnet" in failed["FailureMessage"]
    assert f"subnet '{tiny['SubnetId']}'" in failed["FailureMessage"]
    assert free(account, tiny["SubnetId"]) == 11  # nothing was taken


def test_public_addresses_are_documentation_addresses_and_the_nat_sits_in_its_subnet(account):
    net = network(account)
    subnet = net["subnets"][0]
    cidr = ipaddress.ip_network(account.ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["CidrBlock"])
    start = free(account, subnet)
    eip = account.ec2.allocate_address(Domain="vpc")
    assert ipaddress.ip_address(eip["PublicIp"]) in ipaddress.ip_network("198.51.100.0/24")
    second = account.ec2.allocate_address(Domain="vpc")
    assert second["PublicIp"] != eip["PublicIp"]
    assert {a["PublicIp"] for a in account.ec2.describe_addresses()["Addresses"]} == {
        eip["PublicIp"],
        second["PublicIp"],
    }

    nat = account.ec2.create_nat_gateway(SubnetId=subnet, AllocationId=eip["AllocationId"])["NatGateway"]
    [address] = nat["NatGatewayAddresses"]
    assert address["PublicIp"] == eip["PublicIp"] and ipaddress.ip_address(address["PrivateIp"]) in cidr
    described = account.ec2.describe_nat_gateways(NatGatewayIds=[nat["NatGatewayId"]])["NatGateways"][0]
    assert described["NatGatewayAddresses"][0]["PrivateIp"] == address["PrivateIp"]
    assert free(account, subnet) == start - 1

    account.ec2.delete_nat_gateway(NatGatewayId=nat["NatGatewayId"])
    wait_for(lambda: free(account, subnet) == start)
