#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static char s_buf[1<<20], r_buf[1<<20];
int main(void){shmem_init();int me=shmem_my_pe();
 for(size_t n=1;n<=131072;n*=2){for(size_t i=0;i<n;i++){s_buf[i]='a';r_buf[i]='b';}shmem_barrier_all();
 if(me==0){double t[100];for(int i=0;i<100;i++){double a=now();shmem_getmem(r_buf,s_buf,n,1);t[i]=now()-a;}
 double sum=0;for(int i=1;i<100;i++)sum+=t[i];if(n>=16384)printf("%zu: %.0f/%.0f  ",n,t[0],sum/99);}
 shmem_barrier_all();}
 if(me==0)printf("\n");
 shmem_finalize();}
