"""``bench/profile_cpu.py``: samples put on the instructions of a disassembly, and the
share that waits on a square root or a division (the run under ``perf`` itself needs a
machine that lets a user sample, so only its analysis is tested here)."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("profile_cpu", os.path.join(ROOT, "bench", "profile_cpu.py"))
profile_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(profile_cpu)

LISTING = """
/tmp/code.bin:     file format binary

Disassembly of section .data:

0000000000001000 <.data>:
    1000:\tc5 f3 59 c2          \tvmulsd %xmm2,%xmm1,%xmm0
    1004:\tc5 f3 51 c9          \tvsqrtsd %xmm1,%xmm1,%xmm1
    1008:\tc5 f3 59 c1          \tvmulsd %xmm1,%xmm1,%xmm0
    100c:\tc5 fb 58 c1          \tvaddsd %xmm1,%xmm0,%xmm0
    1010:\tc5 fb 58 c2          \tvaddsd %xmm2,%xmm0,%xmm0
    1014:\tc5 f3 5e c2          \tvdivsd %xmm2,%xmm1,%xmm0
    1018:\t48 01 c8             \tadd    %rcx,%rax
    101b:\tc3                   \tret
"""


def test_the_listing_is_read_address_by_address():
    ins = profile_cpu.parse_listing(LISTING)
    assert [a for a, _ in ins] == [0x1000, 0x1004, 0x1008, 0x100C, 0x1010, 0x1014, 0x1018, 0x101B]
    assert ins[1][1].startswith("vsqrtsd") and ins[5][1].startswith("vdivsd")


def test_samples_within_the_skid_of_a_divider_instruction_wait_on_it():
    ins = profile_cpu.parse_listing(LISTING)
    samples = {0x1000: 5, 0x1008: 7, 0x100C: 3, 0x1010: 11, 0x1018: 2, 0x9999: 50}
    got = profile_cpu.attribute(samples, ins, skid=2)
    assert got["samples"] == 28  # the address outside the listing is left out
    # 0x1008 and 0x100c are within two of the square root, 0x1018 one after the division;
    # 0x1010 is three after the square root and before the division
    assert got["waiting_on_divider"] == 7 + 3 + 2
    assert got["square_roots"] == 1 and got["divisions"] == 1
    assert got["range"] == (0x1000, 0x1018)
    assert got["mnemonics"]["vaddsd"] == 14
    tight = profile_cpu.attribute(samples, ins, skid=0)
    assert tight["waiting_on_divider"] == 0  # no sample lands on a divider instruction itself
