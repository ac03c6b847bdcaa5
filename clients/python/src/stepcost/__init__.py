"""Python client of stepcostd, the stepcost service.

    import stepcost
    with stepcost.Client("localhost:8081") as c:
        resp = c.estimate_plan({"model": {"name": "llama3-8b"},
                                "cluster": {"name": "dgx-h100"},
                                "training": {"seq_len": 8192, "global_batch": 256},
                                "gpus": 32})
        print(resp.plans[0].layout)

stepcost.v1.stepcost_pb2 holds the generated messages (also exported here as
stepcost.pb) and stepcost.v1.stepcost_pb2_grpc the raw StepcostServiceStub.
"""

from stepcost.client import Client, StepcostError
from stepcost.v1 import stepcost_pb2 as pb

__all__ = ["Client", "StepcostError", "pb"]
