#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#ifndef NMIN
#define NMIN (64 << 10)
#endif
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void sse2(char*d,const char*s,size_t n){size_t h=(-(uintptr_t)d)&63;memcpy(d,s,h);d+=h;s+=h;n-=h;
 for(;n>=64;n-=64,d+=64,s+=64){__m128i a=_mm_loadu_si128((const __m128i*)s),b=_mm_loadu_si128((const __m128i*)(s+16)),c=_mm_loadu_si128((const __m128i*)(s+32)),e=_mm_loadu_si128((const __m128i*)(s+48));
 _mm_stream_si128((__m128i*)d,a);_mm_stream_si128((__m128i*)(d+16),b);_mm_stream_si128((__m128i*)(d+32),c);_mm_stream_si128((__m128i*)(d+48),e);}
 memcpy(d,s,n);_mm_sfence();}
static void sse2u(char*d,const char*s,size_t n){size_t h=(-(uintptr_t)d)&63;memcpy(d,s,h);d+=h;s+=h;n-=h;
 for(;n>=256;n-=256,d+=256,s+=256){__m128i v[16];for(int i=0;i<16;i++)v[i]=_mm_loadu_si128((const __m128i*)(s+16*i));
 for(int i=0;i<16;i++)_mm_stream_si128((__m128i*)(d+16*i),v[i]);}
 memcpy(d,s,n);_mm_sfence();}
__attribute__((target("avx2"))) static void avx2(char*d,const char*s,size_t n){size_t h=(-(uintptr_t)d)&63;memcpy(d,s,h);d+=h;s+=h;n-=h;
 for(;n>=128;n-=128,d+=128,s+=128){__m256i a=_mm256_loadu_si256((const __m256i*)s),b=_mm256_loadu_si256((const __m256i*)(s+32)),c=_mm256_loadu_si256((const __m256i*)(s+64)),e=_mm256_loadu_si256((const __m256i*)(s+96));
 _mm256_stream_si256((__m256i*)d,a);_mm256_stream_si256((__m256i*)(d+32),b);_mm256_stream_si256((__m256i*)(d+64),c);_mm256_stream_si256((__m256i*)(d+96),e);}
 memcpy(d,s,n);_mm_sfence();}
/* two pages interleaved, as glibc's large_memcpy_2x */
static void pg2(char*d,const char*s,size_t n){size_t h=(-(uintptr_t)d)&63;memcpy(d,s,h);d+=h;s+=h;n-=h;
 while(n>=8192){for(size_t o=0;o<4096;o+=64){for(int p=0;p<2;p++){const char*ss=s+p*4096+o;char*dd=d+p*4096+o;
  __m128i a=_mm_loadu_si128((const __m128i*)ss),b=_mm_loadu_si128((const __m128i*)(ss+16)),c=_mm_loadu_si128((const __m128i*)(ss+32)),e=_mm_loadu_si128((const __m128i*)(ss+48));
  _mm_stream_si128((__m128i*)dd,a);_mm_stream_si128((__m128i*)(dd+16),b);_mm_stream_si128((__m128i*)(dd+32),c);_mm_stream_si128((__m128i*)(dd+48),e);}}
  n-=8192;d+=8192;s+=8192;}
 sse2(d,s,n);}
static void pf(char*d,const char*s,size_t n){size_t h=(-(uintptr_t)d)&63;memcpy(d,s,h);d+=h;s+=h;n-=h;
 for(;n>=64;n-=64,d+=64,s+=64){_mm_prefetch(s+512,_MM_HINT_T0);__m128i a=_mm_loadu_si128((const __m128i*)s),b=_mm_loadu_si128((const __m128i*)(s+16)),c=_mm_loadu_si128((const __m128i*)(s+32)),e=_mm_loadu_si128((const __m128i*)(s+48));
 _mm_stream_si128((__m128i*)d,a);_mm_stream_si128((__m128i*)(d+16),b);_mm_stream_si128((__m128i*)(d+32),c);_mm_stream_si128((__m128i*)(d+48),e);}
 memcpy(d,s,n);_mm_sfence();}
static void pg4(char*d,const char*s,size_t n){size_t h=(-(uintptr_t)d)&63;memcpy(d,s,h);d+=h;s+=h;n-=h;
 while(n>=16384){for(size_t o=0;o<4096;o+=64){for(int p=0;p<4;p++){const char*ss=s+p*4096+o;char*dd=d+p*4096+o;
  __m128i a=_mm_loadu_si128((const __m128i*)ss),b=_mm_loadu_si128((const __m128i*)(ss+16)),c=_mm_loadu_si128((const __m128i*)(ss+32)),e=_mm_loadu_si128((const __m128i*)(ss+48));
  _mm_stream_si128((__m128i*)dd,a);_mm_stream_si128((__m128i*)(dd+16),b);_mm_stream_si128((__m128i*)(dd+32),c);_mm_stream_si128((__m128i*)(dd+48),e);}}
  n-=16384;d+=16384;s+=16384;}
 sse2(d,s,n);}
static void mc(char*d,const char*s,size_t n){memcpy(d,s,n);}
int main(int argc,char**argv){size_t R=(size_t)4<<20;R*=50; int which=atoi(argv[1]);
 void(*f[])(char*,const char*,size_t)={mc,sse2,sse2u,avx2,pg2,pf,pg4}; const char*nm[]={"memcpy","sse2","sse2x4","avx2","pg2","pf","pg4"};
 char*src=mmap(0,R,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0),*dst=mmap(0,R,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
 printf("%-7s",nm[which]);
 for(size_t n=NMIN;n<=(4<<20);n<<=1){double best=0;for(int rep=0;rep<5;rep++){memset(src,1,R);memset(dst,2,R);double t=now();int it=n<8192?500:50;for(int i=0;i<it;i++)f[which](dst+i*n,src+i*n,n);t=now()-t;double r=it/t;if(r>best)best=r;}
 printf(" %8.0f",best);}
 printf("\n");}
