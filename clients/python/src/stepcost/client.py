"""A small client over the generated stub: what every caller of stepcostd would
otherwise write again.

- Requests can be the REST body as a dict (the JSON of the README's curl
  examples), parsed strictly: a misspelt field raises instead of being dropped.
- Every call has a deadline: the daemon stops a search when its caller's deadline
  passes, and a scheduler must not wait forever on a plan.
- UNAVAILABLE (daemon overloaded, restarting, or a replica going away) is retried
  with backoff within that deadline, after the delay the daemon suggests in its
  RetryInfo when it gives one. Nothing else is retried: the answers are
  deterministic, so INVALID_ARGUMENT, NOT_FOUND or RESOURCE_EXHAUSTED (a request
  over a size limit) would fail again unchanged.
- Errors become StepcostError with the gRPC code and the offending fields the
  daemon names (google.rpc.BadRequest), decoded here so that no googleapis
  package is needed.
"""

import random
import time
from typing import List, Mapping, Optional, Sequence, Tuple, Union

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from stepcost.v1 import stepcost_pb2 as pb
from stepcost.v1 import stepcost_pb2_grpc as pb_grpc

__all__ = ["Client", "StepcostError"]

_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


class StepcostError(Exception):
    """A call that failed: its gRPC code, message, and what the daemon said about it.

    violations lists (field, description) pairs, e.g. ("layout.tp", "3 does not
    divide the 32 heads"); retry_delay is the daemon's suggested wait in seconds
    (on UNAVAILABLE when it is overloaded), or None.
    """

    def __init__(self, code: grpc.StatusCode, message: str,
                 violations: Sequence[Tuple[str, str]] = (),
                 retry_delay: Optional[float] = None):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.violations: List[Tuple[str, str]] = list(violations)
        self.retry_delay = retry_delay

    @property
    def retryable(self) -> bool:
        return self.code == grpc.StatusCode.UNAVAILABLE


Request = Union[Message, Mapping]


class Client:
    """A connection to stepcostd's gRPC port.

    target is host:port (default port 8081). timeout is the deadline of each call
    in seconds, retries included. token is sent as "authorization: Bearer <token>"
    when the daemon requires one (--auth-token-file). For TLS give tls=True and,
    for a private CA or mutual TLS, the PEM files. retries bounds the extra
    attempts after UNAVAILABLE. max_receive_bytes is the largest answer the
    channel accepts: 64 MiB, as the CLI and the REST gateway take, since
    gRPC's default 4 MiB is less than one EstimatePlan answer may list (each
    plan lists its GPUs; the daemon's --max-answer-gpus, about 2 M GPUs, is
    4 MB of protobuf). A channel given is used as it is.

    Use it as a context manager, or call close().
    """

    def __init__(self, target: str = "localhost:8081", *, timeout: float = 30.0,
                 token: Optional[str] = None, tls: bool = False,
                 ca_file: Optional[str] = None, cert_file: Optional[str] = None,
                 key_file: Optional[str] = None, retries: int = 4,
                 max_receive_bytes: int = 64 << 20,
                 channel: Optional[grpc.Channel] = None):
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_receive_bytes <= 0:
            raise ValueError("max_receive_bytes must be positive")
        options = [("grpc.max_receive_message_length", max_receive_bytes)]
        self.timeout = timeout
        self.retries = max(0, retries)
        self._metadata = (("authorization", "Bearer " + token),) if token else None
        if channel is None:
            if tls or ca_file or cert_file:
                creds = grpc.ssl_channel_credentials(
                    root_certificates=_read(ca_file),
                    private_key=_read(key_file),
                    certificate_chain=_read(cert_file))
                channel = grpc.secure_channel(target, creds, options=options)
            else:
                channel = grpc.insecure_channel(target, options=options)
        self._channel = channel
        self.stub = pb_grpc.StepcostServiceStub(channel)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def estimate_plan(self, request: Request, *, timeout: Optional[float] = None) -> pb.EstimatePlanResponse:
        """Searches and ranks the plans of a job (EstimatePlanRequest or its JSON as a dict)."""
        return self._call(self.stub.EstimatePlan, pb.EstimatePlanRequest, request, timeout)

    def estimate_step(self, request: Request, *, timeout: Optional[float] = None) -> pb.EstimateStepResponse:
        """Estimates one layout with its full breakdown."""
        return self._call(self.stub.EstimateStep, pb.EstimateStepRequest, request, timeout)

    def rank_configs(self, request: Request, *, timeout: Optional[float] = None) -> pb.RankConfigsResponse:
        """Estimates and ranks a batch of layouts; a bad item carries its own error."""
        return self._call(self.stub.RankConfigs, pb.RankConfigsRequest, request, timeout)

    def simulate_collective(self, request: Request, *, timeout: Optional[float] = None) -> pb.SimulateCollectiveResponse:
        """Prices one collective on a group of a cluster."""
        return self._call(self.stub.SimulateCollective, pb.SimulateCollectiveRequest, request, timeout)

    def calibrate_cluster(self, request: Request, *, timeout: Optional[float] = None) -> pb.CalibrateClusterResponse:
        """Fits a base cluster to nccl-tests outputs and training logs; returns the calibrated cluster and the report."""
        return self._call(self.stub.CalibrateCluster, pb.CalibrateClusterRequest, request, timeout)

    def list_catalog(self, *, timeout: Optional[float] = None) -> pb.ListCatalogResponse:
        """Lists the GPUs, systems and models the daemon knows by name."""
        return self._call(self.stub.ListCatalog, pb.ListCatalogRequest, pb.ListCatalogRequest(), timeout)

    def _call(self, method, message_type, request: Request, timeout: Optional[float]):
        if isinstance(request, Message):
            if not isinstance(request, message_type):
                raise TypeError(f"want {message_type.DESCRIPTOR.full_name}, got {type(request).__name__}")
            msg = request
        else:
            # Strict like the REST gateway: ParseDict raises on unknown fields.
            msg = json_format.ParseDict(request, message_type())
        if timeout is None:
            timeout = self.timeout
        elif not timeout > 0:
            raise ValueError(f"timeout must be positive (got {timeout!r}); None for the client's {self.timeout} s")
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StepcostError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed while retrying")
            try:
                return method(msg, timeout=remaining, metadata=self._metadata)
            except grpc.RpcError as e:
                err = _to_error(e)
            if not err.retryable or attempt >= self.retries:
                raise err
            # Full jitter, so that callers refused together do not come back together;
            # never sooner than the daemon asked, never past the deadline.
            delay = max(err.retry_delay or 0.0, random.uniform(0, 0.1 * 2 ** attempt))
            if delay >= deadline - time.monotonic():
                raise err
            time.sleep(delay)
            attempt += 1


def _read(path: Optional[str]) -> Optional[bytes]:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def _to_error(e: grpc.RpcError) -> StepcostError:
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    message = e.details() if hasattr(e, "details") else str(e)
    violations: List[Tuple[str, str]] = []
    retry_delay = None
    trailers = e.trailing_metadata() if hasattr(e, "trailing_metadata") else None
    for key, value in trailers or ():
        if key != "grpc-status-details-bin":
            continue
        try:
            violations, retry_delay = _status_details(value)
        except (ValueError, IndexError):
            pass  # malformed details: the code and message still say what failed
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in (message or ""):
        # The channel's receive limit, not the daemon's: say how to get the answer.
        message += (" (the answer is over this client's receive limit: ask for fewer or"
                    " smaller plans, top_k, or raise Client(max_receive_bytes=...))")
    return StepcostError(code, message or "", violations, retry_delay)


def _status_details(status: bytes) -> Tuple[List[Tuple[str, str]], Optional[float]]:
    """Reads the BadRequest and RetryInfo details out of a serialized google.rpc.Status.

    Only the few fields used are decoded (their numbers are part of the googleapis
    wire contract): Status.details = 3 (Any: type_url = 1, value = 2);
    BadRequest.field_violations = 1 (field = 1, description = 2);
    RetryInfo.retry_delay = 1 (Duration: seconds = 1, nanos = 2).
    """
    violations: List[Tuple[str, str]] = []
    retry_delay = None
    for num, value in _fields(status):
        if num != 3 or not isinstance(value, bytes):
            continue
        any_fields = dict(_fields(value))
        type_url = any_fields.get(1, b"").decode("utf-8", "replace")
        body = any_fields.get(2, b"")
        if type_url == _BAD_REQUEST:
            for vnum, v in _fields(body):
                if vnum == 1 and isinstance(v, bytes):
                    fv = dict(_fields(v))
                    violations.append((fv.get(1, b"").decode("utf-8", "replace"),
                                       fv.get(2, b"").decode("utf-8", "replace")))
        elif type_url == _RETRY_INFO:
            for dnum, d in _fields(body):
                if dnum == 1 and isinstance(d, bytes):
                    dur = dict(_fields(d))
                    retry_delay = dur.get(1, 0) + dur.get(2, 0) / 1e9
    return violations, retry_delay


def _fields(buf: bytes):
    """Yields (field number, value) of a protobuf message: ints for varints, bytes
    for length-delimited fields; fixed-width fields are skipped."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            yield num, v
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated field")
            yield num, buf[i:i + n]
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")


def _varint(buf: bytes, i: int) -> Tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
