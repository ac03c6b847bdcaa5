"""Unit tests of stepcost.Client without a daemon: retries, deadlines, error
details, strict requests. cmd/stepcostd's TestPythonClient runs them, and the
example against a real daemon:

    PYTHONPATH=clients/python/src /usr/bin/python3 -m unittest discover -s clients/python/tests
"""

import unittest

import grpc

import stepcost
from stepcost import pb
from stepcost.v1 import stepcost_pb2_grpc as pb_grpc
from stepcost.client import _status_details

# A google.rpc.Status as the daemon sends it in grpc-status-details-bin, made
# with Go's status.WithDetails: UNAVAILABLE "overloaded" with RetryInfo 1.5 s,
# ErrorInfo (reason X), and BadRequest violations a.b "bad" and c "worse".
STATUS = bytes.fromhex(
    "080e120a6f7665726c6f616465641a360a28747970652e676f6f676c65617069732e636f6d"
    "2f676f6f676c652e7270632e5265747279496e666f120a0a0808011080cab5ee011a2f0a28"
    "747970652e676f6f676c65617069732e636f6d2f676f6f676c652e7270632e4572726f7249"
    "6e666f12030a01581a450a29747970652e676f6f676c65617069732e636f6d2f676f6f676c"
    "652e7270632e4261645265717565737412180a0a0a03612e6212036261640a0a0a01631205"
    "776f727365")


class FakeError(grpc.RpcError):
    def __init__(self, code, details, trailers=()):
        self._code, self._details, self._trailers = code, details, trailers

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailers


class FakeChannel:
    """Answers every call from a script: exceptions are raised, messages returned."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls = []

    def unary_unary(self, path, request_serializer=None, response_deserializer=None):
        def call(request, timeout=None, metadata=None):
            self.calls.append((path, request, timeout, metadata))
            outcome = self.outcomes.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        return call

    def close(self):
        pass


REQUEST = {"model": {"name": "llama3-8b"}, "cluster": {"name": "dgx-h100"},
           "training": {"seq_len": 8192, "global_batch": 256}, "gpus": 32}


class ClientTest(unittest.TestCase):
    def test_status_details(self):
        violations, delay = _status_details(STATUS)
        self.assertEqual(violations, [("a.b", "bad"), ("c", "worse")])
        self.assertEqual(delay, 1.5)

    def test_malformed_details_keep_code(self):
        err = FakeError(grpc.StatusCode.INVALID_ARGUMENT, "gpus: bad",
                        (("grpc-status-details-bin", b"\x1a\xff"),))
        with stepcost.Client(channel=FakeChannel(err)) as c:
            with self.assertRaises(stepcost.StepcostError) as ctx:
                c.estimate_plan(REQUEST)
        self.assertEqual(ctx.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(ctx.exception.violations, [])

    def test_retries_unavailable(self):
        ok = pb.EstimatePlanResponse(estimator_version="v")
        ch = FakeChannel(FakeError(grpc.StatusCode.UNAVAILABLE, "overloaded"),
                         FakeError(grpc.StatusCode.UNAVAILABLE, "overloaded"), ok)
        with stepcost.Client(channel=ch, token="t0k") as c:
            self.assertEqual(c.estimate_plan(REQUEST), ok)
        self.assertEqual(len(ch.calls), 3)
        path, request, timeout, metadata = ch.calls[0]
        self.assertEqual(path, "/stepcost.v1.StepcostService/EstimatePlan")
        self.assertEqual(request.gpus, 32)
        self.assertEqual(request.model.name, "llama3-8b")
        self.assertTrue(0 < timeout <= 30)
        self.assertEqual(metadata, (("authorization", "Bearer t0k"),))

    def test_no_retry_past_deadline(self):
        # The daemon asks for 1.5 s; with a 0.2 s deadline the client gives up at once.
        err = FakeError(grpc.StatusCode.UNAVAILABLE, "overloaded",
                        (("grpc-status-details-bin", STATUS),))
        ch = FakeChannel(err, pb.EstimatePlanResponse())
        with stepcost.Client(channel=ch, timeout=0.2) as c:
            with self.assertRaises(stepcost.StepcostError) as ctx:
                c.estimate_plan(REQUEST)
        self.assertEqual(len(ch.calls), 1)
        self.assertEqual(ctx.exception.retry_delay, 1.5)

    def test_call_timeout_must_be_positive(self):
        # As the constructor's: 0 was read as no timeout given (the client's 30 s),
        # a negative one sent nothing and reported a deadline passed while retrying.
        for bad in (0, 0.0, -1):
            ch = FakeChannel(pb.EstimatePlanResponse())
            with stepcost.Client(channel=ch) as c:
                with self.assertRaises(ValueError) as ctx:
                    c.estimate_plan(REQUEST, timeout=bad)
            self.assertIn("timeout", str(ctx.exception))
            self.assertEqual(ch.calls, [])
        ch = FakeChannel(pb.EstimatePlanResponse())
        with stepcost.Client(channel=ch) as c:
            c.estimate_plan(REQUEST, timeout=5)
        self.assertLessEqual(ch.calls[0][2], 5)

    def test_does_not_retry_invalid_argument(self):
        err = FakeError(grpc.StatusCode.INVALID_ARGUMENT, "gpus: must be positive",
                        (("grpc-status-details-bin", STATUS),))
        ch = FakeChannel(err, pb.EstimatePlanResponse())
        with stepcost.Client(channel=ch) as c:
            with self.assertRaises(stepcost.StepcostError) as ctx:
                c.estimate_plan(REQUEST)
        self.assertEqual(len(ch.calls), 1)
        self.assertFalse(ctx.exception.retryable)
        self.assertIn(("a.b", "bad"), ctx.exception.violations)

    def test_gives_up_after_retries(self):
        errs = [FakeError(grpc.StatusCode.UNAVAILABLE, "down") for _ in range(3)]
        ch = FakeChannel(*errs)
        with stepcost.Client(channel=ch, retries=2) as c:
            with self.assertRaises(stepcost.StepcostError):
                c.list_catalog()
        self.assertEqual(len(ch.calls), 3)

    def test_strict_request(self):
        # Like the REST gateway: a misspelt field is an error, not a silent default.
        with stepcost.Client(channel=FakeChannel()) as c:
            with self.assertRaises(Exception) as ctx:
                c.estimate_plan(dict(REQUEST, gpu=32))
        self.assertIn("gpu", str(ctx.exception))

    def test_wrong_message_type(self):
        with stepcost.Client(channel=FakeChannel()) as c:
            with self.assertRaises(TypeError):
                c.estimate_plan(pb.EstimateStepRequest())


class LargeAnswerTest(unittest.TestCase):
    """An EstimatePlan answer over gRPC's default 4 MiB receive limit (the
    daemon's --max-answer-gpus lets one list about 2 M GPUs, 4 MB of protobuf,
    and a daemon started with a larger limit sends more) reaches the caller."""

    def test_answer_over_4_mib(self):
        from concurrent import futures

        # 2.2 M GPUs on 8-GPU nodes, as the daemon lists a placement.
        nodes = [pb.NodeUse(node=n, gpus=range(8)) for n in range(2_200_000 // 8)]
        answer = pb.EstimatePlanResponse(plans=[pb.Plan(rank=1, gpus=2_200_000,
                                                        placement=pb.Placement(nodes=nodes))])
        self.assertGreater(answer.ByteSize(), 4 << 20)

        class Servicer(pb_grpc.StepcostServiceServicer):
            def EstimatePlan(self, request, context):
                return answer

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1),
                             options=[("grpc.max_send_message_length", -1)])
        pb_grpc.add_StepcostServiceServicer_to_server(Servicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            with stepcost.Client(f"127.0.0.1:{port}", timeout=60, retries=0) as c:
                got = c.estimate_plan(REQUEST)
        finally:
            server.stop(None)
        self.assertEqual(len(got.plans[0].placement.nodes), len(nodes))

        # Below the answer's size, the error says what to change.
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        pb_grpc.add_StepcostServiceServicer_to_server(Servicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            with stepcost.Client(f"127.0.0.1:{port}", timeout=60, retries=0,
                                 max_receive_bytes=4 << 20) as c:
                with self.assertRaises(stepcost.StepcostError) as ctx:
                    c.estimate_plan(REQUEST)
        finally:
            server.stop(None)
        self.assertEqual(ctx.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("max_receive_bytes", str(ctx.exception))
        self.assertIn("top_k", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
