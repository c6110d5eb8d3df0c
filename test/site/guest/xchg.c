// SPDX-License-Identifier: Apache-2.0
// xchg BYTES BURN_S: the site's MPI job. Rank 0 (first node) sends BYTES
// to rank 1 (second node) over Open MPI's tcp btl, rank 1 sends the same
// back, then every rank burns a core for BURN_S seconds. Rank 0 prints the
// payload each way, for the harness to hold the nodes' network counters to.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1 << 20)

static void move(long bytes, int from, int to, int rank, char *buf)
{
	long done = 0;
	while (done < bytes) {
		int n = bytes - done < CHUNK ? (int)(bytes - done) : CHUNK;
		if (rank == from)
			MPI_Send(buf, n, MPI_BYTE, to, 0, MPI_COMM_WORLD);
		else if (rank == to)
			MPI_Recv(buf, n, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		done += n;
	}
}

int main(int argc, char **argv)
{
	int rank, size;
	long bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
	double burn = argc > 2 ? atof(argv[2]) : 10, t0;
	volatile unsigned long spin = 0;
	char *buf = malloc(CHUNK);

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || buf == NULL) {
		fprintf(stderr, "xchg: needs 2 ranks (got %d)\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(buf, rank + 1, CHUNK);
	move(bytes, 0, 1, rank, buf);
	move(bytes, 1, 0, rank, buf);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	while (MPI_Wtime() - t0 < burn)
		spin++;
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("payload %ld bytes each way\n", bytes);
	MPI_Finalize();
	free(buf);
	return 0;
}
