/*
 * MPI-IO on a file system, the HPC workload:
 *
 *   mpirun -n 4 mpiio n1|nn DIR MIB_PER_RANK BLOCK_BYTES
 *
 * n1: N-to-1 strided. Every rank writes MIB_PER_RANK MiB into one shared file
 *     DIR/mpiio-n1, in blocks of BLOCK_BYTES: block b of rank r lies at
 *     (b * ranks + r) * BLOCK_BYTES, written with MPI_File_write_at_all (collective).
 * nn: N-to-N. Every rank writes its own file DIR/mpiio-nn.RANK, block after block, with
 *     MPI_File_write_at.
 *
 * The files are closed, then every rank reads back the blocks of ANOTHER rank (r + 1)
 * and checks them against the content that rank wrote: each 8-byte word is a function of
 * (rank, block, word), so a block misplaced, torn, stale or from another rank is caught.
 * Rank 0 prints one line:
 *
 *   mpiio MODE write_MBps=X read_MBps=Y ok
 *
 * (MB = 10^6 bytes; each phase timed from a barrier before the open to a barrier after
 * the close, over the bytes of all ranks), or "... MISMATCH words=N" and every rank
 * exits 1. ROMIO's default driver for the file system is used (no hints).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t word(int rank, long block, long i) {
  uint64_t x = ((uint64_t) rank << 56) ^ ((uint64_t) block << 24) ^ (uint64_t) i;
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ULL; /* spreads the bits: neighbouring words differ everywhere */
  return x ^ (x >> 29);
}

static void fill(uint64_t *buf, long words, int rank, long block) {
  for (long i = 0; i < words; i++) {
    buf[i] = word(rank, block, i);
  }
}

static long check(const uint64_t *buf, long words, int rank, long block) {
  long bad = 0;
  for (long i = 0; i < words; i++) {
    bad += buf[i] != word(rank, block, i);
  }
  return bad;
}

static void die(const char *what, int err) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, msg, &len);
  fprintf(stderr, "mpiio: %s: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

#define CHECK(call, what) do { int e_ = (call); if (e_ != MPI_SUCCESS) die(what, e_); } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 5 || (strcmp(argv[1], "n1") != 0 && strcmp(argv[1], "nn") != 0)) {
    if (rank == 0) {
      fprintf(stderr, "usage: mpiio n1|nn DIR MIB_PER_RANK BLOCK_BYTES\n");
    }
    MPI_Finalize();
    return 2;
  }
  int shared = strcmp(argv[1], "n1") == 0;
  long mib = atol(argv[3]);
  long bs = atol(argv[4]);
  if (mib <= 0 || bs < 8 || bs % 8 != 0 || (mib << 20) % bs != 0) {
    if (rank == 0) {
      fprintf(stderr, "mpiio: MIB_PER_RANK > 0 and BLOCK_BYTES a multiple of 8 dividing it\n");
    }
    MPI_Finalize();
    return 2;
  }
  long blocks = (mib << 20) / bs;
  long words = bs / 8;
  uint64_t *buf = malloc(bs);
  if (buf == NULL) {
    die("malloc", MPI_ERR_NO_MEM);
  }
  char path[4096];
  int other = (rank + 1) % ranks;
  MPI_File fh;
  MPI_Status st;

  /* write */
  if (shared) {
    snprintf(path, sizeof path, "%s/mpiio-n1", argv[2]);
  } else {
    snprintf(path, sizeof path, "%s/mpiio-nn.%d", argv[2], rank);
  }
  if (shared && rank == 0) {
    MPI_File_delete(path, MPI_INFO_NULL); /* a previous run's; absent is fine */
  } else if (!shared) {
    MPI_File_delete(path, MPI_INFO_NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  CHECK(MPI_File_open(shared ? MPI_COMM_WORLD : MPI_COMM_SELF, path,
      MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), "open for writing");
  for (long b = 0; b < blocks; b++) {
    fill(buf, words, rank, b);
    if (shared) {
      CHECK(MPI_File_write_at_all(fh, (MPI_Offset) (b * ranks + rank) * bs, buf, (int) bs,
          MPI_BYTE, &st), "write_at_all");
    } else {
      CHECK(MPI_File_write_at(fh, (MPI_Offset) b * bs, buf, (int) bs, MPI_BYTE, &st),
          "write_at");
    }
  }
  CHECK(MPI_File_close(&fh), "close after writing");
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();

  /* read back another rank's blocks */
  if (!shared) {
    snprintf(path, sizeof path, "%s/mpiio-nn.%d", argv[2], other);
  }
  long bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t2 = MPI_Wtime();
  CHECK(MPI_File_open(shared ? MPI_COMM_WORLD : MPI_COMM_SELF, path, MPI_MODE_RDONLY,
      MPI_INFO_NULL, &fh), "open for reading");
  for (long b = 0; b < blocks; b++) {
    memset(buf, 0, bs);
    int got = 0;
    if (shared) {
      CHECK(MPI_File_read_at_all(fh, (MPI_Offset) (b * ranks + other) * bs, buf, (int) bs,
          MPI_BYTE, &st), "read_at_all");
    } else {
      CHECK(MPI_File_read_at(fh, (MPI_Offset) b * bs, buf, (int) bs, MPI_BYTE, &st),
          "read_at");
    }
    MPI_Get_count(&st, MPI_BYTE, &got);
    bad += got != bs ? words : check(buf, words, other, b);
  }
  CHECK(MPI_File_close(&fh), "close after reading");
  MPI_Barrier(MPI_COMM_WORLD);
  double t3 = MPI_Wtime();

  long total_bad = 0;
  MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    double bytes = (double) ranks * (double) (mib << 20);
    printf("mpiio %s write_MBps=%.1f read_MBps=%.1f %s", argv[1], bytes / (t1 - t0) / 1e6,
        bytes / (t3 - t2) / 1e6, total_bad == 0 ? "ok\n" : "MISMATCH");
    if (total_bad != 0) {
      printf(" words=%ld\n", total_bad);
    }
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return total_bad == 0 ? 0 : 1;
}
