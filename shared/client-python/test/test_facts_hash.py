"""facts_hash against the shared vectors (shared/test-vectors/facts-hash.json), which the
TypeScript client and the server are checked against too, and what it refuses."""

import json
import math
import pathlib
import unittest

from approvals import FACTS_HASH_PATTERN, canonicalize, facts_hash
from approvals._jcs import number_to_string

VECTORS = pathlib.Path(__file__).resolve().parents[2] / "test-vectors" / "facts-hash.json"


class SharedVectors(unittest.TestCase):
    def test_every_vector_gives_the_canonical_text_and_the_hash(self) -> None:
        vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]
        self.assertGreaterEqual(len(vectors), 20)
        for v in vectors:
            with self.subTest(v["name"]):
                self.assertEqual(canonicalize(v["input"]), v["canonical"])
                self.assertEqual(facts_hash(v["input"]), v["factsHash"])
                self.assertRegex(facts_hash(v["input"]), FACTS_HASH_PATTERN)

    def test_the_vectors_hold_what_python_and_javascript_read_differently(self) -> None:
        text = VECTORS.read_text(encoding="utf-8")
        for needle in ("1e+21", "-0.0", "9007199254740993", "18446744073709551615", "1e-07", "0.1", "\\u0000", "\U0001F600"):
            self.assertIn(needle, text)


class Numbers(unittest.TestCase):
    def test_ecmascript_number_to_string(self) -> None:
        cases = {
            1e21: "1e+21",
            1e20: "100000000000000000000",
            1e-7: "1e-7",
            1e-6: "0.000001",
            0.1: "0.1",
            -0.0: "0",
            0: "0",
            2**53: "9007199254740992",
            2**53 + 1: "9007199254740992",
            2**64 - 1: "18446744073709552000",
            10**25: "1e+25",
            1.0: "1",
            -1.5: "-1.5",
            5e-324: "5e-324",
            1.7976931348623157e308: "1.7976931348623157e+308",
            123e-20: "1.23e-18",
            0.30000000000000004: "0.30000000000000004",
        }
        for value, text in cases.items():
            with self.subTest(repr(value)):
                self.assertEqual(number_to_string(value), text)

    def test_int_and_float_of_the_same_value_hash_alike(self) -> None:
        self.assertEqual(facts_hash({"a": 1}), facts_hash({"a": 1.0}))
        self.assertEqual(facts_hash({"a": 0}), facts_hash({"a": -0.0}))
        self.assertEqual(facts_hash([1, 2]), facts_hash((1, 2)))


class Refusals(unittest.TestCase):
    def test_what_json_cannot_carry_is_refused(self) -> None:
        for bad in (math.nan, math.inf, -math.inf, 10**400):
            with self.subTest(repr(bad)):
                with self.assertRaises(ValueError):
                    facts_hash({"x": bad})
        with self.assertRaises(ValueError):
            facts_hash({"x": "lone \ud800 surrogate"})
        with self.assertRaises(ValueError):
            facts_hash({"\udc00": 1})
        with self.assertRaises(TypeError):
            facts_hash({1: "non-string key"})
        for bad in ({1, 2}, b"bytes", object()):
            with self.subTest(type(bad).__name__):
                with self.assertRaises(TypeError):
                    facts_hash({"x": bad})

    def test_a_cycle_is_refused_not_a_recursion_error(self) -> None:
        a: list = []
        a.append(a)
        with self.assertRaises(ValueError):
            facts_hash(a)

    def test_bools_are_literals_not_numbers(self) -> None:
        self.assertEqual(canonicalize({"t": True, "one": 1}), '{"one":1,"t":true}')


if __name__ == "__main__":
    unittest.main()
