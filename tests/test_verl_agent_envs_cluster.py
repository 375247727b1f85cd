"""The drop-in runtime on a Ray cluster of several nodes (Ray's own test cluster: several
raylets on this machine), one of which is removed in the middle of a validation pass.

Light on purpose (two cores): a head node without CPUs for the driver and two one-CPU
worker nodes. Ray is a test dependency; without it these tests skip, except under
CI=true, where they fail.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile

import pytest

from unavailable import unavailable
from sokoban_tools.integrations.verl_agent.envs import build_sokoban_envs
from test_verl_agent_envs_ray import ENV_KWARGS, play

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError as err:
        unavailable(f"ray is not installed ({err}); pip install -e '.[test]'")
    # The test cluster writes its address where a bare ray.init() looks for one: keep it private,
    # so that no other Ray user on this machine connects to it.
    private = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    previous = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = private
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield ray, cluster, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()
        if previous is None:
            del os.environ["RAY_TMPDIR"]
        else:
            os.environ["RAY_TMPDIR"] = previous
        shutil.rmtree(private, ignore_errors=True)


def node_of(ray, actor) -> str:
    return ray.get(actor.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id()))


def validation_pass(ray, cluster=None, remove=None):
    """One pass of 8 environments a chunk (32 chunks, 4 turns each) in 4 actors; ``remove`` is
    (chunk, turn): then the node of actor 0 is removed before that step."""
    policy = random.Random(5)
    envs = build_sokoban_envs(1051, 8, 1, "tiny_rgb_array", is_train=False, env_kwargs=ENV_KWARGS, envs_per_actor=2)
    try:
        nodes = {node_of(ray, actor) for actor in envs.workers.actors}
        seen = []
        for chunk in range(envs.begin_pass(update=2)):
            fault = None
            if remove and remove[0] == chunk:
                def fault(turn):
                    if turn == remove[1]:
                        lost = node_of(ray, envs.workers.actors[0])
                        [node] = [n for n in cluster.worker_nodes if n.node_id == lost]
                        cluster.remove_node(node)
            seen += play(envs, 4, policy, fault)
        return seen, envs.end_pass(), nodes
    finally:
        envs.close()


def test_cluster__actors_spread_over_nodes_and_a_node_removed_mid_validation_is_survived(cluster):
    ray, test_cluster, _ = cluster
    clean, clean_records, nodes = validation_pass(ray)
    assert len(nodes) == 2  # the four actors are spread over both worker nodes
    remove = (random.Random().randrange(32), random.Random().randrange(4))
    faulty, faulty_records, _ = validation_pass(ray, test_cluster, remove)
    assert len(ray.nodes()) - sum(node["Alive"] for node in ray.nodes()) == 1  # one node is gone
    assert len(clean_records) == 256
    assert faulty == clean and faulty_records == clean_records, f"node removed at (chunk, turn) {remove}"
