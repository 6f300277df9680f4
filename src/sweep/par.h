/* par -- MPI ranks for sweeps: active only when the process was started by mpirun or srun */
#ifndef AMLA_PAR_H
#define AMLA_PAR_H

#include <stddef.h>

/* Starts MPI when a launcher's variables are set (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
 * PMI_SIZE); otherwise the process is rank 0 of 1 and no MPI call is ever made. */
void par_init(int *argc, char ***argv);
void par_finalize(void);

int par_rank(void);
int par_size(void);
/* Ranks on this machine (for dividing its cores among them). */
int par_local_size(void);

/* Rank 0's n bytes to every rank. */
void par_bcast(void *buf, size_t n);
/* The largest of every rank's x, on every rank. */
int par_max(int x);
/* A rank's bytes to rank 0 (len may be 0) / rank 0 receiving rank `from`'s (malloc'ed). */
void par_send(const char *buf, size_t len);
char *par_recv(int from, size_t *len);

#endif
