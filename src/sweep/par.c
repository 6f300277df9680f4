/* par -- MPI ranks for sweeps (OpenMPI; funneled: only the main thread calls MPI) */
#include "sweep/par.h"

#include "base/err.h"

#include <mpi.h>
#include <stdlib.h>

static int par_on, par_r, par_n = 1, par_local = 1;

void par_init(int *argc, char ***argv)
{
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_SIZE"))
        return;
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    par_on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &par_r);
    MPI_Comm_size(MPI_COMM_WORLD, &par_n);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, par_r, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &par_local);
    MPI_Comm_free(&node);
}

void par_finalize(void)
{
    if (par_on)
        MPI_Finalize();
    par_on = 0;
}

int par_rank(void) { return par_r; }
int par_size(void) { return par_n; }
int par_local_size(void) { return par_local; }

void par_bcast(void *buf, size_t n)
{
    if (par_on && n > 0)
        MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

int par_max(int x)
{
    int y = x;
    if (par_on)
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return y;
}

void par_send(const char *buf, size_t len)
{
    if (!par_on)
        return;
    unsigned long long n = len;
    MPI_Send(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, 1, MPI_COMM_WORLD);
    if (n > 0)
        MPI_Send(buf, (int)n, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
}

char *par_recv(int from, size_t *len)
{
    unsigned long long n = 0;
    MPI_Recv(&n, 1, MPI_UNSIGNED_LONG_LONG, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char *buf = err_malloc((size_t)n + 1, 1);
    if (n > 0)
        MPI_Recv(buf, (int)n, MPI_CHAR, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}
