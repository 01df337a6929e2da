#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static long pSync1[SHMEM_BCAST_SYNC_SIZE], pSync2[SHMEM_BCAST_SYNC_SIZE];
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int iters=argc>1?atoi(argv[1]):5000; int which=argc>2?atoi(argv[2]):0;
  for(int i=0;i<SHMEM_BCAST_SYNC_SIZE;i++)pSync1[i]=pSync2[i]=SHMEM_SYNC_VALUE;
  shmem_init(); int me=shmem_my_pe(), n=shmem_n_pes();
  char *buf=shmem_malloc(4096); memset(buf,1,4096);
  double *t=malloc(sizeof(double)*iters), *tb=malloc(sizeof(double)*iters);
  shmem_barrier_all();
  for(int i=0;i<iters;i++){
    double a=now();
    if(which==0) shmem_broadcast32(buf,buf,2,0,0,0,n,(i&1)?pSync1:pSync2);
    else shmem_barrier_all();
    double b=now();
    shmem_barrier_all();
    double c=now();
    t[i]=b-a; tb[i]=c-b;
  }
  double s=0,sb=0; for(int i=0;i<iters;i++){s+=t[i];sb+=tb[i];}
  qsort(t,iters,sizeof *t,cmp); qsort(tb,iters,sizeof *tb,cmp);
  printf("PE %d op mean %.1f p50 %.1f p90 %.1f p99 %.1f max %.0f | barrier mean %.1f p50 %.1f p90 %.1f p99 %.1f\n",me,s/iters,t[iters/2],t[iters*9/10],t[iters*99/100],t[iters-1],sb/iters,tb[iters/2],tb[iters*9/10],tb[iters*99/100]);
  shmem_finalize(); return 0;}
