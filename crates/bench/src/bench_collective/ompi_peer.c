/* The OpenMPI peer of `linerate bench collective`: the same measurement as
 * collective::bench (barrier; operation; barrier; median over repetitions), on int32 sums,
 * printing "ROW bytes op median_us" on rank 0; argv[1], if given, is the largest message
 * size to measure. Built with mpicc at benchmark time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t max_bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)-1;
    const char *ops[3] = {"barrier", "allreduce", "bcast"};
    const size_t sizes[8] = {64, 512, 1 << 10, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 8 << 20};
    for (int s = 0; s < 8 && sizes[s] <= max_bytes; s++) {
        size_t bytes = sizes[s];
        int count = (int)(bytes / 4);
        int *in = malloc(bytes), *out = malloc(bytes);
        for (int i = 0; i < count; i++) in[i] = 1;
        int reps = (int)(2000000 / bytes);
        if (reps < 5) reps = 5;
        if (reps > 200) reps = 200;
        double *t = malloc(sizeof(double) * reps);
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < reps; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (k == 1) MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                if (k == 2) MPI_Bcast(in, count, MPI_INT, 0, MPI_COMM_WORLD);
                MPI_Barrier(MPI_COMM_WORLD);
                t[i] = (MPI_Wtime() - t0) * 1e6;
            }
            qsort(t, reps, sizeof(double), cmp);
            if (rank == 0) printf("ROW %zu %s %.2f\n", bytes, ops[k], t[reps / 2]);
        }
        free(in);
        free(out);
        free(t);
    }
    /* Fig. 5b: rank 0 sends, rank 1 acknowledges with one int. */
    const size_t gsizes[7] = {1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20, 64 << 20};
    for (int s = 0; s < 7 && size >= 2 && gsizes[s] <= max_bytes; s++) {
        size_t bytes = gsizes[s];
        int count = (int)(bytes / 4), ack = 1;
        int *buf = malloc(bytes);
        for (int i = 0; i < count; i++) buf[i] = 7;
        int reps = (int)(64000000 / bytes);
        if (reps < 3) reps = 3;
        if (reps > 50) reps = 50;
        double *t = malloc(sizeof(double) * reps);
        for (int i = 0; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, count, MPI_INT, 1, 7, MPI_COMM_WORLD);
                MPI_Recv(&ack, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, count, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&ack, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
            }
            t[i] = (MPI_Wtime() - t0) * 1e6;
        }
        qsort(t, reps, sizeof(double), cmp);
        if (rank == 0) printf("ROW %zu sendrecv %.2f\n", bytes, t[reps / 2]);
        free(buf);
        free(t);
    }
    MPI_Finalize();
    return 0;
}
