"""``wp.noise``, ``wp.pnoise`` and ``wp.curlnoise``: NVIDIA Warp 1.19's values bit for bit in
float32, exact gradients (adjoint and tangent against float64 finite differences), and
properties that do not depend on Warp (periodicity, zeros on the lattice).

The Warp values below were printed by ``tests/data/make_noise_reference.py`` (Warp 1.19, CPU)
for the points ``points(dim)`` defined there; rerun it to regenerate the block.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import weft as wp
from tests.gradcheck import Arr, check

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data"))
from make_noise_reference import CURL_ARGS, N, PERIODS, SEEDS, points  # noqa: E402

VEC = {2: wp.vec2, 3: wp.vec3, 4: wp.vec4}

# --- BEGIN WARP REFERENCE (tests/data/make_noise_reference.py, Warp 1.19.0, CPU)
NOISE, PNOISE, CURL, GRAD, CURL_GRAD = {}, {}, {}, {}, {}
NOISE[42, 1] = [
    0.0, -0.0, 0.0, 0.0, 0.008839548, 0.00029701716, 0.00092563033, 0.015528309, -0.019068103,
    -0.10473971, -0.2938874, 0.1417156, 0.00037341123, -0.014498685, 0.29030743, 0.08222809,
    0.04103911, -0.022042751, -0.095114365, 0.18880396,
]
NOISE[42, 2] = [
    0.0, 0.0, 0.0, -0.1213535, -0.29978275, 0.0012706117, -0.0014060736, 0.19416699, 0.005534976,
    0.066208065, -0.23791628, -0.012668181, -0.12826046, -0.06378162, 0.096456856, 0.053899214,
    -0.23376782, 0.12764579, -0.058392335, 0.06941995,
]
NOISE[42, 3] = [
    0.0, -0.0, 0.0, -0.008985877, -0.21916908, 0.001542759, -0.00020253658, 0.25909483,
    -0.075429544, -0.27456656, -0.3309285, -0.2734958, 0.02255395, 0.3627804, 0.030036971,
    0.1422072, 0.1893902, -0.28592852, 0.020876676, 0.3881889,
]
NOISE[42, 4] = [
    0.0, 0.0, 0.0, 0.18045114, -0.2638996, 0.001836011, -0.0011351109, -0.0401055, -0.26211813,
    0.15164621, 0.043895334, 0.22017238, 0.020804375, 0.14082155, -0.04601869, 0.026728094,
    -0.047025368, 0.26206523, 0.087177895, -0.18908842,
]
PNOISE[42, 1] = [
    0.0, -0.0, 0.0, 0.0, 0.008839548, 0.00029701716, 0.00009268522, -0.0232989, -0.019068103,
    -0.10473971, -0.2938874, 0.16588423, 0.0010498815, -0.020283282, -0.058862656, 0.08222809,
    -0.2347254, -0.022042751, -0.095114365, 0.24621966,
]
PNOISE[42, 2] = [
    0.0, 0.0, 0.0, 0.123599224, -0.29978275, 0.0012706117, 0.00003427267, 0.19416699, 0.005534976,
    0.27213904, -0.23791628, -0.15513171, -0.12826046, 0.24577023, 0.096456856, -0.40087056,
    0.20643772, -0.0324554, -0.058392335, 0.17491424,
]
PNOISE[42, 3] = [
    0.0, 0.0, 0.0, 0.13794762, -0.21916908, 0.001542759, -0.0004041195, -0.27965125, 0.01217024,
    -0.15669438, 0.18471676, 0.22484241, -0.39300233, -0.09077737, 0.25057718, -0.12679538,
    -0.26471964, -0.043923527, 0.17866825, -0.2213056,
]
PNOISE[42, 4] = [
    0.0, 0.0, 0.0, 0.09379622, -0.2638996, 0.001836011, -0.000618428, 0.032413542, -0.10504951,
    0.17210689, 0.1182549, -0.051070474, 0.12187323, -0.045968503, -0.075166985, -0.21216214,
    -0.12170309, -0.08443913, 0.23550622, 0.19594482,
]
CURL[42, 2, 'default'] = [
    -0.9457666, 0.32484698, 0.14036047, 0.99010044, 0.038798742, -0.9992471, 0.8418324,
    -0.04668482, -0.39331776, 0.07459438, -0.94574594, 0.32486156, -0.6252874, 0.78034186,
    0.6221209, 0.6553285, 0.41919056, -0.45929855, -0.6320592, -0.398767, 0.7439647, 0.20521933,
    0.18632233, -0.9504623, 0.18762057, 0.75424016, -0.15062952, -0.32462507, -0.6536946,
    -0.2437304, -0.24639177, 0.8480214, -0.2721491, 1.0356399, 0.022170603, -0.26531774, 0.9863206,
    0.016576037, 1.009848, 0.84135133,
]
CURL[42, 2, 'octaves'] = [
    -1.8537027, 0.6367001, -0.5017696, 1.6298704, -0.471685, -1.4861852, 0.33096558, 0.27522415,
    0.07657737, -0.5880225, -1.8535838, 0.6367831, -0.0014334619, 1.1228671, 0.04978478,
    0.66566765, 0.85547066, -0.15805434, -0.878245, -1.1010469, 0.7257656, 0.057778597, 0.54833484,
    -1.24373, 0.46390805, 1.0703777, 0.3498541, 0.31415904, -0.88118744, -0.2257211, 0.17098252,
    1.2682562, 0.2387268, 0.42497894, -0.7208787, -0.5473395, 0.82756966, 0.07573745, 1.3355663,
    1.4663917,
]
CURL[42, 3, 'default'] = [
    1.4908774, 0.514387, -1.3837324, -0.8092483, 0.5503556, 1.0655924, 1.3639282, -0.08857334,
    -1.2432168, -0.3303267, -0.5783157, 0.4400115, 1.0256104, 0.6845571, 0.40545595, 1.4908576,
    0.51440567, -1.3837576, 1.3151636, 0.6680583, -1.4799516, 0.40922832, 0.72131807, 0.4930186,
    -0.83808994, -1.2802256, 0.25942296, 0.63513005, -0.19872263, 0.7794217, 1.4545196, 0.8830677,
    0.30772537, 0.6339512, 0.08877593, -0.54224545, 0.30358654, -0.09779084, -0.52167463,
    0.45854178, -1.0173829, 0.15902194, 0.31946474, 0.49634868, -1.4340528, -0.32110062,
    0.22601816, 0.5834709, -0.35604346, 1.3326222, -0.7056652, -0.21848124, -1.0079384,
    -0.28368235, -0.18836793, 0.07370293, 0.22256234, -0.49265066, -0.14594042, -0.88038576,
]
CURL[42, 3, 'octaves'] = [
    1.8001885, 0.48972538, -1.7685412, -1.1951737, 1.1300002, 1.163877, 1.5346447, 0.4585901,
    -0.84128046, -0.60739577, -0.8523642, -0.17058828, 1.2866741, 0.7226171, 0.6407273, 1.8001405,
    0.4898786, -1.7685052, 1.4532847, 1.7690761, -1.4575136, 0.6950337, 0.6300559, 1.1502929,
    -0.8531994, -1.3619902, 0.47076926, 0.79623747, 0.044295102, 1.0906456, 1.9917713, 0.9895398,
    0.6425593, 0.07429936, 0.7755633, -0.8879462, 0.052580334, -0.31276208, -1.0565165, 0.57150275,
    -1.4499891, 0.5682978, 0.0040265024, 0.46813828, -1.2390695, 0.27487338, 0.83986366, 1.198031,
    -0.04075083, 0.93006814, -0.8193339, 0.6468833, -1.662488, 0.034299016, 0.2530505, -0.51441425,
    0.3654675, -0.9355408, 0.8264884, 0.050328016,
]
CURL[42, 4, 'default'] = [
    1.3667593, 0.44500867, -1.1480533, -0.42466366, 0.773687, -1.420088, 1.0947913, -0.25425723,
    -0.18868828, 0.6148338, 0.8849497, -0.12779468, 0.26072142, 0.41928095, 0.21997643, 1.366741,
    0.44498158, -1.1480751, 1.2291048, 0.21855843, -0.73635554, 0.54550135, 0.64233273, -0.4054799,
    -0.12137148, 0.19962752, 0.769969, -0.6262911, -0.6149363, -0.27617118, 0.39909995,
    -0.18293709, 0.1853283, 0.063135594, -0.83302414, -0.23670521, -0.09769815, 1.1180305,
    0.23983693, 0.009657353, 0.5597675, 0.7285841, 0.24237531, -0.9384596, 1.0268111, -0.096959874,
    0.4854862, 0.13761017, 0.42014778, -0.572773, -0.2627219, -0.4755963, -0.37115973, 0.12129732,
    0.7816543, 0.31620517, -0.1705759, -0.060431883, 0.19438, -0.40886387,
]
CURL[42, 4, 'octaves'] = [
    1.6752466, 0.45187825, -1.533917, -0.6551524, 0.5157051, -1.4183378, 1.3839462, -1.0201887,
    0.15482736, 0.04238853, 0.676604, -0.4981749, 0.40407485, 0.2263552, -0.03350138, 1.6752315,
    0.4518434, -1.53389, 0.8001385, 0.59853655, -0.7958167, 0.51288664, 0.64758164, 0.065000415,
    0.30777642, -0.3488052, 0.39311093, -1.5018555, -0.54460603, 0.07990822, 0.5630158,
    0.123923704, 0.57054436, 0.30107784, -0.32520694, -0.7087516, -0.4155138, 1.2949173,
    -0.13038039, 0.06915277, 0.58542913, 0.5788895, -0.2860534, -0.095586434, 1.1666974,
    -0.46136153, 0.4287939, -0.1646173, 1.0711164, 0.18639715, -0.9683238, -0.31094116,
    -0.50155795, 0.061012752, 0.90519994, 0.7190283, -0.46611005, 0.12529726, 0.4872304,
    -0.56983054,
]
NOISE[1234567, 1] = [
    -0.0, 0.0, 0.0, 0.0, 0.15819216, -0.0009950745, -0.00007104874, 0.031867895, -0.024662506,
    0.09292053, 0.13426843, 0.0979414, 0.003419877, -0.14616105, 0.094676614, -0.066833094,
    -0.09081614, 0.09297848, 0.10548962, 0.26059455,
]
NOISE[1234567, 2] = [
    -0.0, 0.0, 0.0, -0.07794253, 0.24636647, -0.0014095556, -0.00092445686, 0.15517703,
    0.051381316, 0.08867347, 0.17540286, 0.16210571, -0.0049866512, 0.020415321, 0.06464842,
    -0.054935575, -0.09622189, 0.39649117, -0.21711782, -0.19404137,
]
NOISE[1234567, 3] = [
    -0.0, -0.0, 0.0, -0.22369671, 0.26873523, -0.00142504, 0.0013466775, -0.44880897, -0.13378863,
    -0.24470575, 0.08948189, 0.071064115, 0.25729644, -0.11077217, 0.009753431, 0.05900859,
    -0.116718285, 0.08308636, -0.25170416, 0.3289336,
]
NOISE[1234567, 4] = [
    0.0, 0.0, 0.0, 0.037680387, 0.34776568, -0.0017223794, -0.0017225146, 0.043827504, -0.08354522,
    0.058677852, -0.18690175, -0.21196193, 0.14574252, 0.11033146, -0.34190083, -0.034746382,
    0.05469869, 0.06559432, -0.066274926, -0.061543662,
]
PNOISE[1234567, 1] = [
    -0.0, 0.0, 0.0, 0.0, 0.15819216, -0.0009950745, 0.0002680719, 0.006434555, -0.024662506,
    0.09292053, 0.13426843, -0.10823035, -0.003516506, 0.13122869, 0.090932086, -0.066833094,
    0.1377483, 0.09297848, 0.10548962, -0.27716303,
]
PNOISE[1234567, 2] = [
    -0.0, 0.0, 0.0, 0.12818459, 0.24636647, -0.0014095556, -0.00005477667, 0.15517703, 0.051381316,
    0.1202566, 0.17540286, -0.08727404, -0.0049866512, 0.38805583, 0.06464842, -0.17810096,
    -0.16522253, -0.39242566, -0.21711782, 0.26370996,
]
PNOISE[1234567, 3] = [
    -0.0, 0.0, 0.0, 0.17177251, 0.26873523, -0.00142504, 0.00041475892, 0.37493742, 0.1612212,
    0.32792556, -0.019348294, -0.050178096, -0.0507273, 0.20783734, -0.32358977, -0.009027608,
    0.025971275, -0.3734485, -0.26973343, -0.045920283,
]
PNOISE[1234567, 4] = [
    0.0, 0.0, 0.0, 0.33781564, 0.34776568, -0.0017223794, -0.0001924932, 0.16156368, 0.16721866,
    -0.21351762, 0.08937159, -0.21442159, -0.10992332, -0.27347547, -0.10045415, -0.28712243,
    -0.060551617, -0.20195718, 0.06011997, -0.10258779,
]
CURL[1234567, 2, 'default'] = [
    0.6473194, -0.7622189, -0.17820798, -0.9839928, 0.8329495, 0.55334896, 0.49522108, -0.71539295,
    0.2907076, 0.41592932, 0.6473413, -0.7622485, -0.9973553, -0.07269359, 1.0022945, 0.5777666,
    0.37986958, -0.6282045, -0.7417282, -0.46357822, -0.32166252, -0.610084, -1.0404114,
    -0.064435855, 0.046458006, -1.0271983, -0.28478336, 0.3511093, -0.83361703, -0.12123197,
    0.030954659, 0.20146818, -0.41305876, -0.9988448, -0.95891917, -0.2981304, 0.6037499,
    -0.24053386, 0.16880202, 0.52562475,
]
CURL[1234567, 2, 'octaves'] = [
    1.268746, -1.493949, -0.23574908, -1.4410639, 1.2794411, 0.4655805, 0.5843625, -0.57622343,
    0.22113883, 1.4271667, 1.2688711, -1.4941182, -1.1432601, -0.076054215, 1.7785095,
    -0.064278066, 0.3068786, -0.9005435, -0.5386624, -0.45387924, -0.17549881, -0.4688526,
    -1.455742, 0.05117418, 0.21515992, -1.266112, 0.15816851, 0.051769286, -0.86954236, -0.5591488,
    -0.1128642, 0.5799366, -0.77572453, -0.36174074, -1.2770004, 0.044559836, 0.45580924,
    0.101720065, 0.5813408, 0.27861825,
]
CURL[1234567, 3, 'default'] = [
    0.7457666, -0.4002537, 1.5160658, -0.8980473, -1.3059543, 0.03726463, 1.747955, 1.577852,
    -0.34593597, -0.50314707, 0.86652386, -0.17848122, 0.4781564, 0.06854354, 0.562814, 0.74574494,
    -0.40025008, 1.5160937, -0.7164299, -0.7882925, 1.17433, 0.328925, 0.178516, 0.2105436,
    0.6243052, 0.50840724, -0.40118778, -0.9251753, 0.4831128, -0.18957573, -0.5723428, 0.973607,
    0.1713013, -0.75636095, 1.5412304, 0.12304214, -0.19417524, -0.22627312, 0.33865044,
    -0.9795873, -0.80176604, 0.34616637, -0.7798516, -0.1033321, -0.47430366, 0.8686261, 1.1063381,
    -0.020599872, -1.5651009, -0.77031195, 0.4737724, 0.42631358, 0.64877963, -0.8108046,
    -1.1373547, -0.037540197, 0.12321833, -0.07708007, 0.08410093, 0.10239063,
]
CURL[1234567, 3, 'octaves'] = [
    0.93266004, -1.5590906, 1.442014, -1.0545322, -0.76330554, -0.6326237, 1.4533178, 1.6307192,
    -0.3098748, 0.19203442, 1.7793145, -0.03369683, 0.0557608, -1.0475366, -0.49534556, 0.9326632,
    -1.5592446, 1.4420378, -0.87813914, -0.99693334, 1.5774069, 0.69421, 0.28002036, 0.6930659,
    0.7458005, 0.8491204, -1.0268612, -0.25176293, 1.0367988, -0.43395424, -0.45469302, 1.2002643,
    -0.29709607, -0.5462008, 1.3567462, 0.8038127, -0.15367445, -0.55580974, -0.04651141,
    -1.3457912, -0.35076398, 0.33068562, -1.3251653, -0.024750113, -0.028574921, 0.14386842,
    1.4643183, -0.27585626, -1.9963529, -0.40519547, 0.23365474, -0.37681627, 1.3273427,
    -0.47539282, -0.5261777, -1.361745, 0.70859367, 0.060753077, -0.5737059, -0.3283909,
]
CURL[1234567, 4, 'default'] = [
    0.6781554, -0.37808573, 1.3339274, 0.018621951, 0.029067278, 0.026560575, -0.38417155,
    1.077434, -1.3562018, -1.1062901, 0.34350675, -0.5614935, 1.0509794, -0.017589211, 0.3333636,
    0.6781741, -0.3780496, 1.3339515, -0.46841848, 1.1335421, 0.24711064, 0.89723694, 0.67608505,
    -0.2936125, 0.29574025, 0.0067905784, 0.30481657, -0.17949045, -0.1686132, -0.27990636,
    -0.2823858, 0.6767305, 0.4622482, 0.25258464, 0.20360775, 0.72103846, -0.33450797, 0.60186523,
    0.1122863, 0.47369957, 0.13457182, -0.8161081, 0.32577264, 0.6524662, -0.14054927, 0.020842709,
    0.4109485, -0.53596187, 0.8885678, 0.4965468, -2.1024206, -0.7431706, 1.177345, 0.61552876,
    -0.5788085, 0.7202047, -0.448161, 0.23455197, -0.3302273, 0.016121745,
]
CURL[1234567, 4, 'octaves'] = [
    0.73873496, -1.4580537, 1.0885485, -0.20909452, 0.26681292, 0.2368601, -0.7539446, 0.94995916,
    -0.7317189, -1.9061645, 0.24576029, -1.0111958, 0.6124642, -0.10379695, -0.21062467, 0.738799,
    -1.4580989, 1.0885699, -0.005863905, 1.4153237, -0.017341584, 0.8976294, 0.9578882, -0.5469964,
    0.42902833, 0.20699735, 0.76252246, 0.14655423, 0.004114151, -0.067737326, -0.61237955,
    0.036636293, 0.8748055, 1.0196296, 0.3401397, 0.15806064, -0.42300478, 0.2981006, 0.22715718,
    0.30880356, -0.021725625, -1.9256082, 0.054702163, 0.87735164, -0.07737973, 0.31071424,
    0.981533, -0.10816312, 0.031933904, 0.38540608, -1.9356246, -0.4165688, 1.1327287, -0.11485982,
    -0.96121657, 0.39721638, -0.6420098, 0.5038309, 0.16519454, 0.6723704,
]
GRAD[1] = [
    0.29701042, -0.30245125, -0.6733979, -0.62273085, -0.47979283, 0.29703054,
]
GRAD[2] = [
    0.32484698, 0.9457666, 0.99010044, -0.14036047, -0.9992471, -0.038798742, -0.04668482,
    -0.8418324, 0.07459438, 0.39331776, 0.32486156, 0.94574594,
]
GRAD[3] = [
    0.6074309, 1.7684875, 0.7095632, 0.53439945, -1.6459483, -0.37131932, 0.3065898, 0.79832375,
    0.2862823, 0.9041479, -0.35690826, -1.2548984, 0.0073627383, -0.4904151, -0.4919349, 0.6074576,
    1.7685142, 0.70961916,
]
GRAD[4] = [
    0.24593857, 0.7160309, 0.28729025, 0.5867523, -0.4951881, 0.6291759, 0.44127125, -0.40522382,
    0.6051292, -0.3515582, 0.21304202, -0.6817907, 0.040882826, 0.3262927, 0.49865735, -0.1757716,
    -0.119526386, -0.3158952, -0.49757117, 0.43025228, 0.24594812, 0.71604365, 0.2872724,
    0.5867443,
]
CURL_GRAD[2] = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.64292383, -3.248251, -2.4654388, -3.4178095, -0.060728863,
    0.0373094,
]
CURL_GRAD[3] = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.37272805, -3.6365106, 0.18695402, 4.7602177,
    4.8938174, 3.8446317, 0.018895745, 0.0018521994, 0.018861473,
]
CURL_GRAD[4] = [
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5509741, -5.535939, 0.27989233,
    0.29160923, 2.4384828, 3.6779382, 1.7380466, 0.27044183, 0.013561257, 0.0053689014,
    -0.0073758163, -0.0001250644,
]
# --- END WARP REFERENCE


# ----------------------------------------------------------------------------- kernels

@wp.kernel
def values(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
           x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4), octaves: wp.uint32,
           lacunarity: float, gain: float, out: wp.array2d(dtype=float),
           c2: wp.array2d(dtype=wp.vec2), c3: wp.array2d(dtype=wp.vec3),
           c4: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    s = wp.rand_init(seed)
    out[i, 0] = wp.noise(s, x1[i])
    out[i, 1] = wp.noise(s, x2[i])
    out[i, 2] = wp.noise(s, x3[i])
    out[i, 3] = wp.noise(s, x4[i])
    out[i, 4] = wp.pnoise(s, x1[i], 4)
    out[i, 5] = wp.pnoise(s, x2[i], 3, 5)
    out[i, 6] = wp.pnoise(s, x3[i], 2, 4, 3)
    out[i, 7] = wp.pnoise(s, x4[i], 3, 2, 4, 5)
    c2[i, 0] = wp.curlnoise(s, x2[i])
    c3[i, 0] = wp.curlnoise(s, x3[i])
    c4[i, 0] = wp.curlnoise(s, x4[i])
    c2[i, 1] = wp.curlnoise(s, x2[i], octaves, lacunarity, gain)
    c3[i, 1] = wp.curlnoise(s, x3[i], octaves, lacunarity=lacunarity, gain=gain)
    c4[i, 1] = wp.curlnoise(s, x4[i], octaves, lacunarity, gain)


def _points(n=N):
    x = {1: points(1)[:n, 0]}
    x.update({d: points(d)[:n] for d in (2, 3, 4)})
    return x


def run_values(seed, x, octaves=CURL_ARGS[0], lacunarity=CURL_ARGS[1], gain=CURL_ARGS[2],
               device="cpu"):
    """(noise and pnoise of each dimension as the columns of one array, {dim: curlnoise with
    default arguments and with the given ones})."""
    n = len(x[1])
    arrs = [wp.array(x[1], dtype=float, device=device)] + [
        wp.array(x[d], dtype=VEC[d], device=device) for d in (2, 3, 4)]
    out = wp.zeros((n, 8), dtype=float, device=device)
    curl = {2: wp.zeros((n, 2), dtype=wp.vec2, device=device),
            3: wp.zeros((n, 2), dtype=wp.vec3, device=device),
            4: wp.zeros((n, 2), dtype=wp.vec3, device=device)}
    wp.launch(values, n, inputs=[seed, *arrs, wp.uint32(octaves), lacunarity, gain, out,
                                 curl[2], curl[3], curl[4]], device=device)
    return out.numpy(), {d: c.numpy() for d, c in curl.items()}


def assert_bits(got, want, what):
    """Equal as float32 bit patterns (so -0.0 differs from 0.0)."""
    got = np.ascontiguousarray(got, dtype=np.float32).reshape(-1)
    want = np.asarray(want, dtype=np.float32).reshape(-1)
    bad = np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0]
    assert bad.size == 0, f"{what}: differs from Warp at {bad}: {got[bad]} != {want[bad]}"


# ----------------------------------------------------------------------------- Warp's values

@pytest.mark.parametrize("seed", SEEDS)
def test_values_match_warp_bit_for_bit(seed):
    out, curl = run_values(seed, _points())
    for d in (1, 2, 3, 4):
        assert_bits(out[:, d - 1], NOISE[seed, d], f"noise {d}-D")
        assert_bits(out[:, d + 3], PNOISE[seed, d], f"pnoise {d}-D")
    for d in (2, 3, 4):
        assert_bits(curl[d][:, 0], CURL[seed, d, "default"], f"curlnoise {d}-D")
        assert_bits(curl[d][:, 1], CURL[seed, d, "octaves"], f"curlnoise {d}-D, octaves")


# ----------------------------------------------------------------------------- properties

def test_pnoise_is_periodic_and_noise_vanishes_on_the_lattice():
    """pnoise repeats with its periods. As in Warp, the lattice index is ``floor(x) % p`` with
    C's remainder (the sign of the dividend), so the period holds on each side of zero, not
    across it: pnoise(-0.5) differs from pnoise(3.5) for period 4."""
    rng = np.random.default_rng(5)
    n = 8
    # coordinates with few mantissa bits, so that x + k * period is exact
    x = {d: rng.integers(0, 6 * 64, (n, d)).astype(np.float32) / 64 for d in (1, 2, 3, 4)}
    x[1] = x[1][:, 0]
    shifted, negative = {}, {}
    for d in (1, 2, 3, 4):
        k = (rng.integers(0, 4, (n, d)) * np.array(PERIODS[d])).reshape(x[d].shape)
        shifted[d] = (x[d] + k).astype(np.float32)
        negative[d] = -x[d] - 3840.0  # 3840 is a multiple of every period
    out, _ = run_values(SEEDS[1], x, octaves=1)
    out2, _ = run_values(SEEDS[1], shifted, octaves=1)
    np.testing.assert_array_equal(out2[:, 4:], out[:, 4:])
    assert not np.array_equal(out2[:, :4], out[:, :4])  # noise itself is not periodic
    out3, _ = run_values(SEEDS[1], {d: -x[d] for d in x}, octaves=1)
    out4, _ = run_values(SEEDS[1], negative, octaves=1)
    np.testing.assert_array_equal(out4[:, 4:], out3[:, 4:])
    lattice = {d: rng.integers(-50, 50, (n, d)).astype(np.float32) for d in (1, 2, 3, 4)}
    lattice[1] = lattice[1][:, 0]
    out5, curl = run_values(SEEDS[0], lattice, octaves=1)
    assert not out5.any()
    assert np.abs(curl[3]).min() > 0  # the gradient, hence the curl, does not vanish there
    one = {1: np.array([-0.5, 3.5], np.float32)}
    one.update({d: np.zeros((2, d), np.float32) for d in (2, 3, 4)})
    out6, _ = run_values(SEEDS[0], one, octaves=1)
    assert out6[0, 4] != out6[1, 4]


# ----------------------------------------------------------------------------- gradients

@wp.kernel
def grads64(seed: int, x1: wp.array(dtype=wp.float64), x2: wp.array(dtype=wp.vec2d),
            x3: wp.array(dtype=wp.vec3d), x4: wp.array(dtype=wp.vec4d), octaves: wp.uint32,
            lacunarity: wp.float64, gain: wp.float64, out: wp.array2d(dtype=wp.float64),
            c2: wp.array(dtype=wp.vec2d), c3: wp.array(dtype=wp.vec3d),
            c4: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    s = wp.rand_init(seed)
    out[i, 0] = wp.noise(s, x1[i])
    out[i, 1] = wp.noise(s, x2[i])
    out[i, 2] = wp.noise(s, x3[i])
    out[i, 3] = wp.noise(s, x4[i])
    out[i, 4] = wp.pnoise(s, x2[i], 3, 5)
    out[i, 5] = wp.pnoise(s, x3[i], 2, 4, 3)
    c2[i] = wp.curlnoise(s, x2[i], octaves, lacunarity, gain)
    c3[i] = wp.curlnoise(s, x3[i], octaves)  # lacunarity 2 and gain 0.5 by default
    c4[i] = wp.curlnoise(s, x4[i], octaves, wp.float64(2.0), gain=wp.float64(0.5))


def check_gradients_float64():
    """Adjoint and tangent of every builtin against central differences in float64 (several
    octaves and non-default arguments: ``kernel_builtin_walk.py`` checks the defaults)."""
    n = 2
    rng = np.random.default_rng(11)
    x = {d: rng.uniform(-4.0, 4.0, (n, d)) for d in (1, 2, 3, 4)}
    got = check(grads64, n, [SEEDS[1], Arr(x[1][:, 0], wp.float64), Arr(x[2], wp.vec2d),
                             Arr(x[3], wp.vec3d), Arr(x[4], wp.vec4d), wp.uint32(2), 1.5, 0.7],
                [Arr(np.zeros((n, 6)), wp.float64), Arr(np.zeros((n, 2)), wp.vec2d),
                 Arr(np.zeros((n, 3)), wp.vec3d), Arr(np.zeros((n, 3)), wp.vec3d)],
                rtol=1e-6, atol=1e-8)
    # the same field as in float32, to float32 rounding
    x32 = {1: x[1][:, 0].astype(np.float32)}
    x32.update({d: x[d].astype(np.float32) for d in (2, 3, 4)})
    out32, curl32 = run_values(SEEDS[1], x32, octaves=2, lacunarity=2.0, gain=0.5)
    np.testing.assert_allclose(got[0][:, :4], out32[:, :4], atol=2e-6)
    np.testing.assert_allclose(got[0][:, 4:], out32[:, 5:7], atol=2e-6)
    np.testing.assert_allclose(got[2], curl32[3][:, 1], rtol=1e-5, atol=1e-5)


def check_gradients_match_warp():
    """Warp differentiates noise with its analytic gradient and curlnoise with its analytic
    Hessian (in float32); weft derives both itself (here in float64, at the same points)."""
    n = 6
    x = {1: points(1)[:n, 0].astype(np.float64)}
    x.update({d: points(d)[:n].astype(np.float64) for d in (2, 3, 4)})
    vec = {2: wp.vec2d, 3: wp.vec3d, 4: wp.vec4d}

    def grads(octaves, seed_out, seed_curl):
        arrs = [wp.array(x[1], dtype=wp.float64, requires_grad=True)] + [
            wp.array(x[d], dtype=vec[d], requires_grad=True) for d in (2, 3, 4)]
        outs = [wp.zeros((n, 6), dtype=wp.float64, requires_grad=True),
                wp.zeros(n, dtype=wp.vec2d, requires_grad=True),
                wp.zeros(n, dtype=wp.vec3d, requires_grad=True),
                wp.zeros(n, dtype=wp.vec3d, requires_grad=True)]
        tape = wp.Tape()
        with tape:
            wp.launch(grads64, n, inputs=[SEEDS[0], *arrs, wp.uint32(octaves), 2.0, 0.5, *outs])
        tape.backward(grads=dict(zip(outs, [seed_out] + seed_curl)))
        return [a.grad.numpy() for a in arrs]

    # Warp's reference: the gradient of noise 1-D to 4-D plus pnoise 3-D (periods 2, 4, 3) ...
    dout = np.zeros((n, 6))
    dout[:, [0, 1, 2, 3, 5]] = 1.0
    got = grads(1, dout, [np.zeros((n, 2)), np.zeros((n, 3)), np.zeros((n, 3))])
    for d in (1, 2, 3, 4):
        np.testing.assert_allclose(got[d - 1].reshape(-1), GRAD[d], rtol=1e-5, atol=1e-6,
                                   err_msg=f"gradient of noise {d}-D")
    # ... and of w . curlnoise, 2 octaves in 2-D, 1 octave in 3-D and 4-D
    w2, w3 = np.tile([0.3, -0.7], (n, 1)), np.tile([0.5, 0.25, -1.0], (n, 1))
    got2 = grads(2, np.zeros((n, 6)), [w2, np.zeros((n, 3)), np.zeros((n, 3))])
    got1 = grads(1, np.zeros((n, 6)), [np.zeros((n, 2)), w3, w3])
    for d, g in ((2, got2[1]), (3, got1[2]), (4, got1[3])):
        np.testing.assert_allclose(g.reshape(-1), CURL_GRAD[d], rtol=1e-5, atol=1e-5,
                                   err_msg=f"gradient of curlnoise {d}-D")


def test_gradients():
    """The two checks above, run as plain Python (``NUMBA_DISABLE_JIT=1``) in a subprocess:
    compiled, the float64 adjoints and tangents of these kernels take minutes to build, and the
    generated code is the same (set ``NUMBA_DISABLE_JIT=0`` to run them compiled)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env.setdefault("NUMBA_DISABLE_JIT", "1")
    code = ("import sys, warnings; sys.path.insert(0, sys.argv[1]); "
            "warnings.filterwarnings('ignore', 'overflow encountered'); "
            "import tests.stdlib.test_noise as t; "
            "t.check_gradients_float64(); t.check_gradients_match_warp(); print('done')")
    r = subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True,
                       env=env, timeout=900)
    assert r.returncode == 0 and r.stdout.strip().endswith("done"), r.stderr[-4000:]


# ----------------------------------------------------------------------------- CUDA target

@pytest.mark.cudasim
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_cuda_target_matches_warp():
    """The CUDA target gives the same bits under the simulator (numpy scalars, whose uint32
    products wrap as C's and warn about it); on a GPU, where NVVM may contract a * b + c into
    a fused multiply-add, the same values to a few ulp."""
    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

    def same(got, want, what):
        if simulated:
            assert_bits(got, want, what)
        else:
            np.testing.assert_allclose(np.ravel(got), want, rtol=1e-5, atol=1e-6, err_msg=what)

    n = 3
    out, curl = run_values(SEEDS[0], _points(n), device="cuda")
    for d in (1, 2, 3, 4):
        same(out[:, d - 1], NOISE[SEEDS[0], d][:n], f"noise {d}-D")
        same(out[:, d + 3], PNOISE[SEEDS[0], d][:n], f"pnoise {d}-D")
    for d in (2, 3, 4):
        k = 2 if d == 2 else 3
        same(curl[d][:, 1], CURL[SEEDS[0], d, "octaves"][:k * n], f"curlnoise {d}-D")
