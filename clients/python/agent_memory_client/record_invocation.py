from pydantic import Field

from .base_model import BaseModel
from .enums import InvocationPurpose


class RecordInvocation(BaseModel):
    record_invocation: "RecordInvocationRecordInvocation" = Field(
        alias="recordInvocation"
    )


class RecordInvocationRecordInvocation(BaseModel):
    invocation: "RecordInvocationRecordInvocationInvocation"


class RecordInvocationRecordInvocationInvocation(BaseModel):
    id: str
    purpose: InvocationPurpose
    model: str
    input_tokens: int = Field(validation_alias="inputTokens", serialization_alias="inputTokens")
    output_tokens: int = Field(validation_alias="outputTokens", serialization_alias="outputTokens")
    counted: bool


RecordInvocation.model_rebuild()
RecordInvocationRecordInvocation.model_rebuild()
