# Candidate encodings of an event batch that the wire format did not adopt, kept to measure them
# against the adopted one (wire_encoding_bench.cpp).
@0xd8ed1af4c0bd2a4e;

struct BenchEvent {
  timestamp @0 :UInt64;
  functionId @1 :UInt32;
  kind @2 :UInt32;
}

struct BenchBatch {
  events @0 :List(BenchEvent);  # a Cap'n Proto struct list
  raw @1 :Data;                 # the ring's 16-byte records as one blob
}
