from .base_model import BaseModel


class Namespaces(BaseModel):
    namespaces: list[str]
