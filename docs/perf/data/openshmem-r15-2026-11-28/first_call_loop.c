#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static char sg[1<<20], rg[1<<20];
int main(void){shmem_init();int me=shmem_my_pe();memset(sg,1,sizeof sg);memset(rg,2,sizeof rg);shmem_barrier_all();
 if(me==0){for(size_t n=16384;n<=131072;n*=2){double best=1e9,med;double ts[30];for(int rep=0;rep<30;rep++){double a=now();for(int i=0;i<100;i++){shmem_getmem(rg,sg,n,1);__asm__ volatile(""::"r"(rg):"memory");}ts[rep]=(now()-a)/100;if(ts[rep]<best)best=ts[rep];}
 for(int i=0;i<30;i++)for(int j=i+1;j<30;j++)if(ts[j]<ts[i]){double t=ts[i];ts[i]=ts[j];ts[j]=t;} med=ts[15];
 printf("%zu best %.0f med %.0f  ",n,best,med);} printf("\n");}
 shmem_barrier_all();shmem_finalize();}
