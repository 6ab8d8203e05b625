"""Seakeeping: ship-deck motion from a sea state (JONSWAP through motion RAOs) and the reader
of measured ship-motion files, both in the ship columns of docs/contracts.md §1–2."""

from .files import read_ship_motion
from .motion import SHIP_COLUMNS, MotionRAO, SeaState, ShipMotion, jonswap, ship_motion

__all__ = ["SHIP_COLUMNS", "MotionRAO", "SeaState", "ShipMotion", "jonswap", "read_ship_motion", "ship_motion"]
