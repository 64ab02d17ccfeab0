"""Type stubs of linerate.spn."""

from os import PathLike
from typing import Dict, final, Optional, Union

from typing_extensions import Self

import numpy as np
import numpy.typing as npt

from ._linerate import Host

@final
class Model:
    @staticmethod
    def load(path: Union[str, PathLike[str]]) -> Model: ...
    @staticmethod
    def parse(text: str) -> Model: ...
    @staticmethod
    def generate(
        vars: int = 10, seed: int = 1, nodes: Optional[int] = None, leaves: str = "histogram", shape: str = "nips"
    ) -> Model: ...
    def to_json(self) -> str: ...
    def save(self, path: Union[str, PathLike[str]]) -> None: ...
    @property
    def num_vars(self) -> int: ...
    @property
    def name(self) -> str: ...
    def stats(self) -> Dict[str, int]: ...
    def log_likelihood(
        self, x: npt.ArrayLike, mask: Optional[npt.ArrayLike] = None, threads: int = 1
    ) -> npt.NDArray[np.float64]: ...
    def likelihood(
        self, x: npt.ArrayLike, mask: Optional[npt.ArrayLike] = None, threads: int = 1
    ) -> npt.NDArray[np.float64]: ...

@final
class Service:
    def __new__(
        cls, host: Host, model: Model, port: int = 5005, workers: int = 0) -> Self: ...
    def serve(self) -> int: ...
    def counters(self) -> Dict[str, int]: ...
    @property
    def max_vectors(self) -> int: ...
    def query(
        self,
        client: Host,
        x: npt.NDArray[np.uint8],
        mask: Optional[npt.NDArray[np.bool_]] = None,
        log: bool = True,
        vectors_per_request: Optional[int] = None,
        window: int = 8,
        timeout_ms: float = 1000.0,
    ) -> npt.NDArray[np.float64]: ...

__all__ = ["Model", "Service"]
