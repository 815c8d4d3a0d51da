"""Reference implementations that tests check the library against and benchmarks time it
against: code of neither the library nor a benchmark, so tests import nothing from benchmarks/.

    looped_members  M separate torch models trained in a Python loop (the vectorised trainer's
                    reference and the loop baseline)
    roofline        per-kernel FLOP and byte counting of a torch step, and the cards' peaks
"""
