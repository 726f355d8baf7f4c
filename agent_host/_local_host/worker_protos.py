"""The Functions host's gRPC messages (FunctionRpc), built at run time for driving the Python worker in-process.

`azure-functions-runtime` ships without message classes: the worker's gRPC half hands them to it. These are built
from a description of the messages it reads and writes, with the field names and numbers of the host's
FunctionRpc.proto, so values convert exactly as on the wire (map fields, oneofs, proto3 defaults). Needs protobuf;
knows nothing about functions or the local host.
"""

from __future__ import annotations

import types
from functools import cache

# Each message: field lines `[repeated] TYPE NAME = NUMBER`, `map<KEY,VALUE> NAME = NUMBER`, `oneof NAME` (the
# following fields belong to it until `end`), and nested `enum NAME: LABEL=VALUE ...`. Fields the worker never touches
# are left out; what is here keeps the host's numbering.
_SCHEMA: dict[str, list[str]] = {
    "StreamingMessage": [
        "string request_id = 1",
        "oneof content",
        "WorkerInitRequest worker_init_request = 17",
        "WorkerInitResponse worker_init_response = 16",
        "FunctionLoadRequest function_load_request = 8",
        "FunctionLoadResponse function_load_response = 9",
        "InvocationRequest invocation_request = 4",
        "InvocationResponse invocation_response = 5",
        "FunctionsMetadataRequest functions_metadata_request = 29",
        "FunctionMetadataResponse function_metadata_response = 30",
        "end",
    ],
    "WorkerInitRequest": [
        "string host_version = 1",
        "map<string,string> capabilities = 2",
        "string worker_directory = 4",
        "string function_app_directory = 5",
    ],
    "WorkerInitResponse": [
        "string worker_version = 1",
        "map<string,string> capabilities = 2",
        "StatusResult result = 3",
        "WorkerMetadata worker_metadata = 4",
    ],
    "WorkerMetadata": [
        "string runtime_name = 1",
        "string runtime_version = 2",
        "string worker_version = 3",
        "string worker_bitness = 4",
        "map<string,string> custom_properties = 5",
    ],
    "StatusResult": [
        "enum Status: Failure=0 Success=1 Cancelled=2",
        "Status status = 4",
        "string result = 1",
        "RpcException exception = 2",
    ],
    "RpcException": [
        "string source = 3",
        "string stack_trace = 1",
        "string message = 2",
        "bool is_user_exception = 4",
        "string type = 5",
    ],
    "FunctionsMetadataRequest": ["string function_app_directory = 1"],
    "FunctionMetadataResponse": [
        "repeated RpcFunctionMetadata function_metadata_results = 1",
        "StatusResult result = 2",
        "bool use_default_metadata_indexing = 3",
    ],
    "RpcFunctionMetadata": [
        "string name = 4",
        "string directory = 1",
        "string script_file = 2",
        "string entry_point = 3",
        "map<string,BindingInfo> bindings = 6",
        "bool is_proxy = 7",
        "StatusResult status = 8",
        "string language = 9",
        "repeated string raw_bindings = 10",
        "string function_id = 13",
        "bool managed_dependency_enabled = 14",
        "RpcRetryOptions retry_options = 15",
        "map<string,string> properties = 16",
    ],
    "BindingInfo": [
        "enum Direction: in=0 out=1 inout=2",
        "enum DataType: undefined=0 string=1 binary=2 stream=3",
        "string type = 2",
        "Direction direction = 3",
        "DataType data_type = 4",
        "map<string,string> properties = 5",
    ],
    "RpcRetryOptions": [
        "enum RetryStrategy: exponential_backoff=0 fixed_delay=1",
        "int32 max_retry_count = 2",
        "google.protobuf.Duration delay_interval = 3",
        "google.protobuf.Duration minimum_interval = 4",
        "google.protobuf.Duration maximum_interval = 5",
        "RetryStrategy retry_strategy = 6",
    ],
    "FunctionLoadRequest": [
        "string function_id = 1",
        "RpcFunctionMetadata metadata = 2",
        "bool managed_dependency_enabled = 3",
    ],
    "FunctionLoadResponse": [
        "string function_id = 1",
        "StatusResult result = 2",
        "bool is_dependency_downloaded = 3",
    ],
    "InvocationRequest": [
        "string invocation_id = 1",
        "string function_id = 2",
        "repeated ParameterBinding input_data = 3",
        "map<string,TypedData> trigger_metadata = 4",
        "RpcTraceContext trace_context = 5",
        "RetryContext retry_context = 6",
    ],
    "RpcTraceContext": [
        "string trace_parent = 1",
        "string trace_state = 2",
        "map<string,string> attributes = 3",
    ],
    "RetryContext": [
        "int32 retry_count = 1",
        "int32 max_retry_count = 2",
        "RpcException exception = 3",
    ],
    "InvocationResponse": [
        "string invocation_id = 1",
        "repeated ParameterBinding output_data = 2",
        "TypedData return_value = 4",
        "StatusResult result = 3",
    ],
    "TypedData": [
        "oneof data",
        "string string = 1",
        "string json = 2",
        "bytes bytes = 3",
        "bytes stream = 4",
        "RpcHttp http = 5",
        "sint64 int = 6",
        "double double = 7",
        "CollectionBytes collection_bytes = 8",
        "CollectionString collection_string = 9",
        "CollectionDouble collection_double = 10",
        "CollectionSInt64 collection_sint64 = 11",
        "ModelBindingData model_binding_data = 12",
        "CollectionModelBindingData collection_model_binding_data = 13",
        "end",
    ],
    "CollectionString": ["repeated string string = 1"],
    "CollectionBytes": ["repeated bytes bytes = 1"],
    "CollectionDouble": ["repeated double double = 1"],
    "CollectionSInt64": ["repeated sint64 sint64 = 1"],
    "ModelBindingData": [
        "string version = 1",
        "string source = 2",
        "string content_type = 3",
        "bytes content = 4",
    ],
    "CollectionModelBindingData": ["repeated ModelBindingData model_binding_data = 1"],
    "ParameterBinding": [
        "string name = 1",
        "oneof rpc_data",
        "TypedData data = 2",
        "end",
    ],
    "RpcHttp": [
        "string method = 1",
        "string url = 2",
        "map<string,string> headers = 3",
        "TypedData body = 4",
        "map<string,string> params = 10",
        "string status_code = 12",
        "map<string,string> query = 15",
        "bool enable_content_negotiation = 16",
        "TypedData rawBody = 17",
        "repeated RpcHttpCookie cookies = 19",
        "map<string,NullableString> nullable_headers = 20",
        "map<string,NullableString> nullable_params = 21",
        "map<string,NullableString> nullable_query = 22",
    ],
    "RpcHttpCookie": [
        "enum SameSite: None=0 Lax=1 Strict=2 ExplicitNone=3",
        "string name = 1",
        "string value = 2",
        "NullableString domain = 3",
        "NullableString path = 4",
        "NullableTimestamp expires = 5",
        "NullableBool secure = 6",
        "NullableBool http_only = 7",
        "SameSite same_site = 8",
        "NullableDouble max_age = 9",
    ],
    "NullableString": ["oneof string", "string value = 1", "end"],
    "NullableDouble": ["oneof double", "double value = 1", "end"],
    "NullableBool": ["oneof bool", "bool value = 1", "end"],
    "NullableTimestamp": ["oneof timestamp", "google.protobuf.Timestamp value = 1", "end"],
}

_PACKAGE = "AzureFunctionsRpcMessages"


@cache
def function_rpc() -> types.SimpleNamespace:
    """The message classes, as attributes named like the messages (what the worker expects as its ``protos``).

    Raises:
        ImportError: protobuf is not installed.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory, timestamp_pb2

    pool = descriptor_pool.DescriptorPool()
    for imported in (duration_pb2, timestamp_pb2):
        pool.AddSerializedFile(imported.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="agent_host/FunctionRpc.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=["google/protobuf/duration.proto", "google/protobuf/timestamp.proto"],
    )
    for name, lines in _SCHEMA.items():
        _describe_message(file.message_type.add(name=name), lines)
    pool.Add(file)
    return types.SimpleNamespace(
        **{name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}")) for name in _SCHEMA}
    )


_SCALARS = {
    "string": "TYPE_STRING",
    "bytes": "TYPE_BYTES",
    "bool": "TYPE_BOOL",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "sint64": "TYPE_SINT64",
    "double": "TYPE_DOUBLE",
}


def _describe_message(message: object, lines: list[str]) -> None:
    """Fill one DescriptorProto from its schema lines."""
    from google.protobuf import descriptor_pb2

    field_type = descriptor_pb2.FieldDescriptorProto
    enums: set[str] = set()
    oneof: int | None = None
    for line in lines:
        if line.startswith("enum "):
            enum_name, _, labels = line[len("enum ") :].partition(":")
            enum = message.enum_type.add(name=enum_name)  # type: ignore[attr-defined]
            for label in labels.split():
                value_name, _, number = label.partition("=")
                enum.value.add(name=value_name, number=int(number))
            enums.add(enum_name)
            continue
        if line.startswith("oneof "):
            oneof = len(message.oneof_decl)  # type: ignore[attr-defined]
            message.oneof_decl.add(name=line[len("oneof ") :])  # type: ignore[attr-defined]
            continue
        if line == "end":
            oneof = None
            continue
        declaration, _, number = line.partition(" = ")
        *qualifiers, kind, name = declaration.split()
        field = message.field.add(name=name, number=int(number), json_name=name)  # type: ignore[attr-defined]
        field.label = field_type.LABEL_REPEATED if qualifiers == ["repeated"] else field_type.LABEL_OPTIONAL
        if oneof is not None:
            field.oneof_index = oneof
        if kind.startswith("map<"):
            key, value = kind[len("map<") : -1].split(",")
            entry_name = "".join(part.capitalize() for part in name.split("_")) + "Entry"
            entry = message.nested_type.add(name=entry_name)  # type: ignore[attr-defined]
            entry.options.map_entry = True
            _describe_message(entry, [f"{key} key = 1", f"{value} value = 2"])
            field.label = field_type.LABEL_REPEATED
            field.type = field_type.TYPE_MESSAGE
            field.type_name = entry_name
        elif kind in _SCALARS:
            field.type = getattr(field_type, _SCALARS[kind])
        elif kind in enums:
            field.type = field_type.TYPE_ENUM
            field.type_name = kind
        else:
            field.type = field_type.TYPE_MESSAGE
            field.type_name = f".{kind}" if kind.startswith("google.") else f".{_PACKAGE}.{kind}"
